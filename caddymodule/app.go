// Package caddymodule is everything Caddy sees of mediagw: the mediagw app, the HTTP handler
// modules, Caddyfile parsing, the admin API and CLI commands. It provisions, adapts and
// delegates; the behaviour lives in ../handlers and the state in ../storage.
package caddymodule

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/holds"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/handlers/videotask"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the mediagw app: it owns the store, the providers and the static API keys that every
// mediagw handler shares. Configure it with the `mediagw` global option. Handlers find it in
// their Provision; the store it opens stays open across config reloads.
type App struct {
	// StorageRaw selects where state (keys, task ownership, limits, callbacks) is kept: a
	// module in the mediagw.storage namespace, such as {"module": "badger", "path": "…"}.
	// Default: Badger in the "mediagw" folder of Caddy's data directory.
	StorageRaw json.RawMessage `json:"storage,omitempty" caddy:"namespace=mediagw.storage inline_key=module"`

	// Providers are the upstreams, in the order they were configured. A model may be served by
	// one provider only.
	Providers []ProviderConfig `json:"providers,omitempty"`

	// Keys are static API keys. Keys created through the admin API live in the store instead.
	Keys []StaticKey `json:"keys,omitempty"`

	// DisabledAccounts are accounts whose keys are all refused with 403.
	DisabledAccounts []string `json:"disabled_accounts,omitempty"`

	// Currency is the gateway's one currency, for display only: every amount (prices,
	// balances, the ledger) is in it. Default: USD.
	Currency string `json:"currency,omitempty"`

	// Prices are what each model costs, in Currency. A model without a price is free (and
	// still metered). See docs/billing.md.
	Prices []billing.Price `json:"prices,omitempty"`

	// Upload configures presigned direct uploads (mediagw_presign).
	Upload *UploadConfig `json:"upload,omitempty"`

	// RefundUnsuccessfulTasks is accepted for configurations written before billing in money
	// and has no effect: a video task that ends failed, cancelled or expired always releases
	// its hold in full.
	RefundUnsuccessfulTasks bool `json:"refund_unsuccessful_tasks,omitempty"`

	// Watcher tunes the background polling of unfinished video tasks.
	Watcher *WatcherConfig `json:"watcher,omitempty"`

	// Callbacks configures signed deliveries to the callback_url of video tasks.
	Callbacks *CallbacksConfig `json:"callbacks,omitempty"`

	// TaskRetention is how long task ownership records are kept after the task finished (an
	// unfinished task's record is kept until it finishes, at most 72 hours, the longest
	// execution_expires_after, plus the retention after its creation). Records of other
	// upstream objects are kept this long after their creation. Default: 7 days, like the
	// upstream.
	TaskRetention caddy.Duration `json:"task_retention,omitempty"`

	// HoldReconcileInterval is how often one gateway instance releases the holds of money that
	// nobody ended by their deadline (a request or task whose process died): such a hold is
	// released at most this long after its deadline (see docs/billing.md). Default: 30s.
	HoldReconcileInterval caddy.Duration `json:"hold_reconcile_interval,omitempty"`

	// IdempotencyLease is how long an Idempotency-Key stays in flight after its gateway was last
	// heard from: the gateway running the request renews it every third of it, and a retry after
	// a gateway died mid-request runs at most this long later (before, it gets 409). At least 3s
	// (Badger counts expiry in whole seconds).
	// Default: 30s (idempotency.InFlightLease).
	IdempotencyLease caddy.Duration `json:"idempotency_lease,omitempty"`

	// NoAccountMetrics drops the account label of mediagw_spend_micro_units_total, for gateways with
	// very many accounts (usage records and the usage report still have every account).
	// Default: false (counted per account).
	NoAccountMetrics bool `json:"no_account_metrics,omitempty"`
	// UpstreamProxyFromEnv sends the gateway's own provider calls (video task create, query,
	// cancel and the watcher's polls; image edits) through the proxy that HTTPS_PROXY,
	// HTTP_PROXY and NO_PROXY name. Default: false, no proxy, whatever the environment says.
	// (Pass-through traffic goes through reverse_proxy, which has its own transport settings.)
	UpstreamProxyFromEnv bool `json:"upstream_proxy_from_env,omitempty"`
	// AnswerMemory bounds, in bytes, the provider answers that the gateway reads whole and holds
	// at once, all handlers together: the answers to image edits and image task queries, which
	// can carry their images as b64_json (tens of MB each). Bytes are counted as an answer is
	// read (a copy made of it takes its place, counted for what it adds) and given back once it
	// is written to its client (a client that stops reading is given up: see docs). A query
	// that finds no room is refused at once with 503 gateway_busy and Retry-After; an edit
	// reserves 64 KiB before it is charged and sent (refused so when there is none), and its
	// successful answer waits up to 15 s for room past that, then is 502 charged its estimate
	// when its own account's answers took the room (see AnswerMemoryPerAccount), or 503 not
	// charged when other accounts' did.
	// Concurrent queries of one image task share one provider call. It must be at least the
	// largest max_answer of a mediagw_image_edits handler. The gateway keeps one such budget
	// across config reloads. Default: 256 MiB; at most 64 GiB.
	AnswerMemory int64 `json:"answer_memory,omitempty"`
	// AnswerMemoryPerAccount is the part of AnswerMemory that one account's answers may hold at
	// once. Past it, the account's queries are 503 gateway_busy and its edits wait (up to 15 s,
	// then 502 charged) for its own answers to be passed on; other accounts are not affected.
	// It must hold one whole answer: a config whose share is below the largest max_answer of
	// its mediagw_image_edits handlers is refused. Default: a quarter of AnswerMemory; at most
	// AnswerMemory.
	AnswerMemoryPerAccount int64 `json:"answer_memory_per_account,omitempty"`

	store         storage.Store
	storeKey      string
	opened        openedStore
	catalog       *providers.Catalog
	prices        *billing.Table
	authenticator *auth.Authenticator
	staticByID    map[string]storage.APIKey
	disabledAccts map[string]bool
	uploads       *uploads
	accountant    *accounting.Accountant
	runtime       *taskRuntime
	reconciler    *holds.Reconciler
	usage         *usage.Recorder
	observer      *observer
	loadedAt      time.Time
	logger        *zap.Logger
	answers       *upstream.AnswerBudget
	unsizeAnswers func() // puts back the budget's bounds that Start replaced (see unsizeAnswerBudget)
}

// ProviderConfig is one model provider, served by one or more upstreams (accounts).
type ProviderConfig struct {
	// Name identifies the provider; reverse_proxy blocks match it through {mediagw.provider}.
	Name string `json:"name"`
	// BaseURL is the upstream base address including its path prefix, e.g. https://api.openai.com/v1.
	// With APIKey it is the shorthand for a provider with one upstream (named "default"); leave
	// both empty when Upstreams is set.
	BaseURL string `json:"base_url,omitempty"`
	// APIKey is the provider credential. Write it as {env.NAME} or {file.path}: it is expanded
	// when the config loads and never appears in the stored config.
	APIKey string `json:"api_key,omitempty"`
	// Upstreams are the accounts that serve the provider's models. Requests go to a healthy
	// upstream of the lowest priority, chosen at random by weight; one that fails (connection
	// failure, 5xx, 429) cools down for a time that grows with repeated failures and honours
	// Retry-After.
	Upstreams []UpstreamConfig `json:"upstreams,omitempty"`
	// ModelMap maps a client's model id to the id sent upstream. The client's id is served
	// (listed by /v1/models) and is what answers show.
	ModelMap map[string]string `json:"model_map,omitempty"`
	// AuthStyle is how the credential is sent: "bearer" (default), "x-api-key" or "x-goog-api-key".
	// Default for protocol gemini: "x-goog-api-key".
	AuthStyle string `json:"auth_style,omitempty"`
	// Protocol is the video task protocol the upstreams speak: "ark" (default), "dashscope"
	// (Alibaba Cloud Model Studio, Wan models; base_url …/api/v1, Bearer key), "gemini" (Veo
	// through the Gemini API; base_url …/v1beta, x-goog-api-key), "kling" (base_url …/v1;
	// access_key and secret_key instead of api_key), "minimax" (Hailuo; base_url …/v1, Bearer
	// key) or "openai" (OpenAI's /v1/videos, from OpenAI or another gateway; base_url …/v1,
	// Bearer key). Video tasks of the provider's models go
	// through that protocol's adaptor; see docs/video-providers.md. "ark" written out (not
	// the default, the empty string) also sends image edits to Ark's Seedream
	// images/generations instead of the provider's images/edits.
	Protocol string `json:"protocol,omitempty"`
	// ToolImageModel is the image model the provider runs for a Responses image_generation
	// tool that names no model; that model's price prices the tool's images. Default:
	// "gpt-image-2", OpenAI's default (see docs/billing.md).
	ToolImageModel string `json:"tool_image_model,omitempty"`
	// OmitStreamOptions keeps the gateway from adding stream_options.include_usage to the
	// provider's streamed chat and legacy completions, for a provider that refuses the member
	// (the client's own stream_options still pass). Such a stream that ends without reporting
	// its usage is charged at least the output its hold estimated (max_tokens, or the price's
	// max_output), not only the deltas it streamed. Default: false (the gateway asks for the
	// usage).
	OmitStreamOptions bool `json:"omit_stream_options,omitempty"`
	// AccessKey and SecretKey are the credential of protocol kling, in place of APIKey: every
	// request carries a JWT (HS256) made of them, renewed before it expires. Write them as
	// {env.NAME} or {file.path}. The shorthand for one upstream, like BaseURL.
	AccessKey string `json:"access_key,omitempty"`
	SecretKey string `json:"secret_key,omitempty"`
	// MaxRPS bounds the calls per second that this gateway instance's task watcher makes to
	// each of the provider's upstreams (an upstream's own max_rps takes precedence); see
	// UpstreamConfig.MaxRPS. Default: unbounded (the watcher's own max_rps still applies).
	MaxRPS float64 `json:"max_rps,omitempty"`
	// Models are the model ids this provider serves.
	Models []string `json:"models,omitempty"`
	// Costs are an alias of prices: a cost of n for a model is the price {request n} (n
	// units of the currency per request or task); the key "*" gives every model of the
	// provider that has no price of its own that price. A model with neither is free.
	Costs map[string]int64 `json:"costs,omitempty"`
}

// UpstreamConfig is one account of a provider.
type UpstreamConfig struct {
	// Name identifies the upstream within its provider: in task records, logs, the admin API
	// and the {mediagw.upstream_name} placeholder.
	Name string `json:"name"`
	// BaseURL is the upstream base address including its path prefix.
	BaseURL string `json:"base_url"`
	// APIKey is the upstream's credential, best written as {env.NAME} or {file.path}.
	APIKey string `json:"api_key,omitempty"`
	// AccessKey and SecretKey are the upstream's credential under protocol kling.
	AccessKey string `json:"access_key,omitempty"`
	SecretKey string `json:"secret_key,omitempty"`
	// Weight is the upstream's share of requests among the healthy upstreams of its priority.
	// Default: 1.
	Weight int `json:"weight,omitempty"`
	// Priority: lower numbers serve first; the next priority serves only while every upstream
	// of the lower one cools down. Default: 0.
	Priority int `json:"priority,omitempty"`
	// MaxRPS bounds the calls per second that this gateway instance's task watcher makes to
	// the upstream: task reads (an Ark task list read counts once, for up to 100 tasks). A
	// task whose read would exceed it is read as soon as the rate allows; clients' creates
	// count towards it but are never delayed. After a 429 the upstream is left alone for its
	// Retry-After (1 s to 1 min; without one 1 s, doubling with each 429 in a row). Each
	// instance paces its own calls: with N instances, set the provider's limit divided by N.
	// Default: the provider's max_rps, else unbounded.
	MaxRPS float64 `json:"max_rps,omitempty"`
}

// StaticKey is an API key defined in the configuration.
type StaticKey struct {
	// Key is the secret clients send as "Authorization: Bearer <key>". Write it as {env.NAME}
	// or {file.path}; only its SHA-256 is kept in memory.
	Key string `json:"key"`
	// ID is the key's public id, shown in access logs as the user id.
	// Default: "key_" followed by the first 12 hex digits of the secret's SHA-256.
	ID string `json:"id,omitempty"`
	// Account owns the key and every task created with it. Required.
	Account string `json:"account"`
	// Models are glob patterns ('*' any run of characters, '?' one) of the models the key may use.
	// Default: all models.
	Models []string `json:"models,omitempty"`
	// AllowIPs are addresses or CIDR ranges the key may be used from, matched against Caddy's
	// client IP (so trusted_proxies is honoured). Default: any address.
	AllowIPs []string `json:"allow_ips,omitempty"`
	// Disabled refuses the key with 403.
	Disabled bool `json:"disabled,omitempty"`
	// Expires is an RFC 3339 time, from 2000-01-01T00:00:00Z on, from which the key is refused
	// with 403. Leave it out for a key that never expires.
	Expires string `json:"expires,omitempty"`
	// Quota is an alias of Budget, from before billing in money: a quota of n is a budget of n
	// units of the currency for all time (a quota of 0 lets the key spend nothing). A key has
	// one or the other. Default: none.
	Quota *int64 `json:"quota,omitempty"`
	// RateRequests requests are allowed per RateWindow (sliding); past it 429. Default: no limit.
	RateRequests int            `json:"rate_requests,omitempty"`
	RateWindow   caddy.Duration `json:"rate_window,omitempty"`
	// MaxActiveTasks bounds the key's unfinished video tasks; past it 429. Default: no limit.
	MaxActiveTasks int64 `json:"max_active_tasks,omitempty"`
	// Budget is the money the key may spend, in the gateway's currency: a sub-limit of its
	// account's balance, checked with it by every hold (past it 402). Default: none.
	// It is a decimal string as entered ("25.50"; no '+').
	Budget billing.EnteredMoney `json:"budget,omitempty"`
	// BudgetPeriod makes Budget per UTC calendar "day" or "month". Default: for all time.
	BudgetPeriod string `json:"budget_period,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "mediagw",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision expands secrets, checks the configuration and opens the store.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	a.loadedAt = time.Now()
	if err := a.acquireAnswerBudget(); err != nil {
		return err
	}
	repl := caddy.NewReplacer()

	list := make([]*providers.Provider, 0, len(a.Providers))
	for _, pc := range a.Providers {
		p, err := pc.provider(repl)
		if err != nil {
			return err
		}
		list = append(list, p)
	}
	catalog, err := providers.NewCatalog(list)
	if err != nil {
		return err
	}
	a.catalog = catalog.WithHealth(upstreamHealth)
	prices, err := pricesWithCosts(a.Prices, a.Providers)
	if err != nil {
		return err
	}
	if a.prices, err = billing.NewTable(a.Currency, prices); err != nil {
		return err
	}
	for _, model := range a.prices.Models() {
		if _, ok := a.catalog.ProviderFor(model); !ok {
			return fmt.Errorf("price %q: no provider serves the model", model)
		}
	}

	static := make(map[string]storage.APIKey, len(a.Keys))
	ids := map[string]bool{}
	for i, sk := range a.Keys {
		key, err := sk.apiKey(repl)
		if err != nil {
			return fmt.Errorf("key %d: %w", i+1, err)
		}
		if _, dup := static[key.Hash]; dup {
			return fmt.Errorf("key %d (%s): the same secret is configured twice", i+1, key.ID)
		}
		if ids[key.ID] {
			return fmt.Errorf("key %d: id %q is used twice", i+1, key.ID)
		}
		static[key.Hash], ids[key.ID] = key, true
		if err := quotaNeedsPrices(key, a.prices); err != nil {
			return fmt.Errorf("key %d (%s): %w", i+1, key.ID, err)
		}
		a.warnUnservedModels(key)
		if err := storage.CheckNewAccountName(key.Account); err != nil {
			// Kept working (an account named before the rule), but no new account could be so named.
			a.logger.Warn("a key's account name is not in Unicode's composed form (NFC): it may read exactly as another account's",
				zap.String("key_id", key.ID), zap.Error(err))
		}
	}
	disabled := make(map[string]bool, len(a.DisabledAccounts))
	for _, acct := range a.DisabledAccounts {
		disabled[acct] = true
	}
	a.staticByID, a.disabledAccts = make(map[string]storage.APIKey, len(static)), disabled
	for _, k := range static {
		a.staticByID[k.ID] = k
	}

	if err := a.openStore(ctx); err != nil {
		return err
	}
	if err := a.provisionUploads(repl); err != nil {
		return err
	}
	if err := a.provisionObservability(ctx); err != nil {
		return err
	}
	if err := a.provisionTaskRuntime(repl); err != nil {
		return err
	}
	a.authenticator = &auth.Authenticator{Static: static, DisabledAccounts: disabled, Store: a.store}
	a.reconciler = &holds.Reconciler{Ledger: a.store, Leases: a.store, Interval: time.Duration(a.HoldReconcileInterval),
		Logger: a.logger.Named("holds")}
	if accountant := a.accountant; accountant != nil {
		// A released hold of a slot-taking create gives back the slot that no record keeps.
		a.reconciler.Released = func(h storage.Hold, _ storage.LedgerEntry) {
			accountant.SlotOfReleasedHold(context.Background(), h)
		}
		// So does an overdue slot claim of a create that took no hold (a free model's).
		a.reconciler.Claims = accountant.Claims
		// A pass-through video or image task whose end nobody saw is settled when its lease ends.
		lapsed := &passthrough.LapsedHeldObjects{Owners: a.store, Finished: accountant.ObjectFinished}
		a.reconciler.Lapsed = lapsed.Pass
	}
	return nil
}

// Validate checks settings that need no provisioning.
func (a *App) Validate() error {
	if a.TaskRetention < 0 {
		return fmt.Errorf("task_retention must not be negative")
	}
	if a.HoldReconcileInterval < 0 {
		return fmt.Errorf("hold_reconcile_interval must not be negative")
	}
	if a.IdempotencyLease != 0 && a.IdempotencyLease < caddy.Duration(idempotency.MinLease) {
		return fmt.Errorf("idempotency_lease must be at least %v", idempotency.MinLease)
	}
	return a.validateAnswerMemory()
}

// Start sets the gateway's answer budget to this config's bounds, and runs the task watcher, the
// callback outbox and the hold reconciler.
func (a *App) Start() error {
	a.sizeAnswerBudget()
	a.runtime.start(a.reconciler.Run)
	return nil
}

// Stop stops the watcher, the outbox and the reconciler, and gives the answer budget back the
// bounds Start replaced if no config has set its own since (see unsizeAnswerBudget). The store is
// not closed here: the next config may still use it. It is closed when the last config that uses
// it is cleaned up.
func (a *App) Stop() error {
	a.runtime.halt()
	a.unsizeAnswerBudget()
	return nil
}

// Cleanup releases this config's holds on the store and the answer budget.
func (a *App) Cleanup() error {
	err := a.releaseAnswerBudget()
	if a.storeKey == "" {
		return err
	}
	_, storeErr := stores.Delete(a.storeKey)
	a.storeKey = ""
	return errors.Join(err, storeErr)
}

// Store returns the shared state store.
func (a *App) Store() storage.Store { return a.store }

// Catalog returns the providers and the models they serve.
// warnUnservedModels logs, at start, each model a key names without a wildcard that no provider
// serves: requests for it are answered 404 model_not_found. It is a warning, not an error, so that
// a model can leave a provider (or a key be prepared for one to come) without stopping the gateway.
func (a *App) warnUnservedModels(key storage.APIKey) {
	for _, m := range key.Models {
		if _, served := a.catalog.ProviderFor(m); !served && !strings.ContainsAny(m, "*?") {
			a.logger.Warn("a key allows a model that no provider serves; requests for it are answered 404 model_not_found",
				zap.String("key_id", key.ID), zap.String("model", m))
		}
	}
}

func (a *App) Catalog() *providers.Catalog { return a.catalog }

// PriceTable is the price table (never nil once provisioned).
func (a *App) PriceTable() *billing.Table { return a.prices }

// Idempotency makes creates with an Idempotency-Key header safe to retry.
func (a *App) Idempotency() *idempotency.Guard {
	return &idempotency.Guard{Store: a.store, Logger: a.logger.Named("idempotency"), Lease: time.Duration(a.IdempotencyLease), Wait: retryWait}
}

// retryWait is how long the retry of a create with an Idempotency-Key waits for its first
// attempt, still running (its client gave up on it, and the gateway goes on), to end: the retry
// then gets that attempt's answer instead of 409 idempotency_in_progress, which the Ark SDK does
// not retry. Past it the retry is answered 409 with Retry-After.
const retryWait = 10 * time.Second

// Accountant applies key limits and counts usage.
func (a *App) Accountant() *accounting.Accountant { return a.accountant }

// Authenticator resolves API keys.
func (a *App) Authenticator() *auth.Authenticator { return a.authenticator }

// taskRetention is the configured retention or the default.
func (a *App) taskRetention() time.Duration {
	if a.TaskRetention > 0 {
		return time.Duration(a.TaskRetention)
	}
	return storage.DefaultTaskRetention
}

// upstreamHealth is what this process learnt of every upstream's health; it outlives reloads.
var upstreamHealth = providers.NewBoard()

func (pc ProviderConfig) provider(repl *caddy.Replacer) (*providers.Provider, error) {
	p := &providers.Provider{Name: pc.Name, AuthStyle: pc.AuthStyle, Protocol: pc.Protocol, Models: pc.Models, ModelMap: pc.ModelMap,
		ToolImageModel: pc.ToolImageModel, OmitStreamOptions: pc.OmitStreamOptions}
	if !slices.Contains(videotask.Protocols(), cmp.Or(pc.Protocol, adaptor.Ark)) {
		return nil, fmt.Errorf("provider %q: unknown protocol %q: use one of %s", pc.Name, pc.Protocol, strings.Join(videotask.Protocols(), ", "))
	}
	switch {
	case pc.Protocol == adaptor.Gemini && pc.AuthStyle == "":
		p.AuthStyle = providers.AuthGoogAPIKey // the Gemini API's own
	case pc.Protocol == adaptor.Kling && pc.AuthStyle != "":
		return nil, fmt.Errorf("provider %q: protocol kling authenticates with access_key and secret_key; remove auth_style", pc.Name)
	case pc.Protocol == adaptor.Kling:
		p.AuthStyle = providers.AuthKlingJWT
	}
	switch {
	case len(pc.Upstreams) > 0 && (pc.BaseURL != "" || pc.APIKey != "" || pc.AccessKey != "" || pc.SecretKey != ""):
		return nil, fmt.Errorf("provider %q: give base_url and api_key inside each upstream, not beside them", pc.Name)
	case len(pc.Upstreams) == 0:
		pc.Upstreams = []UpstreamConfig{{Name: providers.DefaultUpstreamName, BaseURL: pc.BaseURL, APIKey: pc.APIKey, AccessKey: pc.AccessKey, SecretKey: pc.SecretKey}}
	}
	for _, uc := range pc.Upstreams {
		where := fmt.Sprintf("provider %q: upstream %q", pc.Name, uc.Name)
		if uc.Name == providers.DefaultUpstreamName && pc.BaseURL != "" {
			where = fmt.Sprintf("provider %q", pc.Name) // the shorthand: base_url beside models
		}
		if uc.BaseURL == "" {
			return nil, fmt.Errorf("%s: base_url is required", where)
		}
		base, err := expandRequired(repl, "base_url", uc.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("%s: base_url: %v", where, err)
		}
		apiKey, err := expandRequired(repl, "api_key", uc.APIKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		accessKey, err := expandRequired(repl, "access_key", uc.AccessKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		secretKey, err := expandRequired(repl, "secret_key", uc.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		p.Upstreams = append(p.Upstreams, &providers.Upstream{
			Name: uc.Name, BaseURL: u, APIKey: apiKey, AccessKey: accessKey, SecretKey: secretKey,
			Weight: uc.Weight, Priority: uc.Priority, MaxRPS: cmp.Or(uc.MaxRPS, pc.MaxRPS),
		})
	}
	return p, nil
}

func (sk StaticKey) apiKey(repl *caddy.Replacer) (storage.APIKey, error) {
	secret, err := expandRequired(repl, "the secret", sk.Key)
	if err != nil {
		return storage.APIKey{}, err
	}
	if secret == "" {
		return storage.APIKey{}, fmt.Errorf("the secret is empty: write the key's secret after `key`, best as {env.NAME}")
	}
	if strings.ContainsAny(secret, " \t\r\n") {
		return storage.APIKey{}, fmt.Errorf("the secret must not contain white space")
	}
	if sk.Account == "" {
		return storage.APIKey{}, fmt.Errorf("account is required")
	}
	if err := storage.CheckAccountName(sk.Account); err != nil {
		return storage.APIKey{}, fmt.Errorf("account %q: %w", sk.Account, err)
	}
	if sk.Quota != nil && *sk.Quota < 0 {
		return storage.APIKey{}, fmt.Errorf("quota must not be negative")
	}
	if sk.Quota != nil && sk.Budget > 0 {
		return storage.APIKey{}, fmt.Errorf("quota %d is an alias of budget %d: give the key one of them", *sk.Quota, *sk.Quota)
	}
	if sk.Budget < 0 || sk.Budget > billing.EnteredMoney(storage.MaxAmount) || (sk.BudgetPeriod != "" && sk.BudgetPeriod != storage.BudgetDay && sk.BudgetPeriod != storage.BudgetMonth) {
		return storage.APIKey{}, fmt.Errorf("budget must be an amount of 0 or more, per day, month or for all time")
	}
	if (sk.RateRequests > 0) != (sk.RateWindow > 0) || sk.RateRequests < 0 || sk.MaxActiveTasks < 0 {
		return storage.APIKey{}, fmt.Errorf("rate needs both a positive count and a positive window; max_active_tasks must not be negative")
	}
	key := storage.APIKey{
		ID:       sk.ID,
		Hash:     storage.HashSecret(secret),
		Account:  sk.Account,
		Models:   sk.Models,
		Disabled: sk.Disabled,
		Limits: storage.Limits{
			Quota: sk.Quota, RateRequests: sk.RateRequests, RateWindow: time.Duration(sk.RateWindow),
			MaxActiveTasks: sk.MaxActiveTasks,
			Budget:         storage.Budget{Limit: int64(sk.Budget), Period: sk.BudgetPeriod},
		},
	}
	if key.ID == "" {
		key.ID = "key_" + key.Hash[:12]
	}
	for _, s := range sk.AllowIPs {
		p, err := auth.ParseIPRange(s)
		if err != nil {
			return storage.APIKey{}, err
		}
		key.AllowIPs = append(key.AllowIPs, p)
	}
	if sk.Expires != "" {
		t, err := storage.ParseKeyExpiry(sk.Expires)
		if err != nil {
			return storage.APIKey{}, err
		}
		key.ExpiresAt = t
	}
	return key, nil
}

// defaultStoragePath is where Badger lives when no path is configured.
func defaultStoragePath() string {
	return filepath.Join(caddy.AppDataDir(), "mediagw")
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
