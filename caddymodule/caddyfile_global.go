package caddymodule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/videotask"
	"github.com/mediagw/mediagw/storage"
)

// parseGlobalOption sets up the mediagw app. Syntax:
//
//	mediagw {
//		storage <backend> [<args…>]   (storage badger [<dir>])
//		task_retention <duration>
//		hold_reconcile_interval <duration>
//		idempotency_lease <duration>
//		answer_memory <size>
//		answer_memory_per_account <size>
//		disabled_accounts <account...>
//		refund_unsuccessful_tasks
//		account_metrics on|off
//		upstream_proxy_from_env
//		currency <code>
//		price <model> { … }           (see parsePrice)
//		provider <name> {
//			base_url   <url>
//			api_key    <secret>
//			upstream <name> {
//				base_url <url>
//				api_key  <secret>
//				weight   <n>
//				priority <n>
//				max_rps  <n>
//			}
//			auth_style bearer|x-api-key|x-goog-api-key
//			protocol   ark|dashscope|gemini|kling|minimax|openai
//			access_key <secret>   (protocol kling, with secret_key, in place of api_key)
//			secret_key <secret>
//			models     <model-id...>
//			model_map  <client-model-id> <upstream-model-id>
//			cost       [<model-id>] <units>
//			max_rps    <n>            (each upstream's, unless its block sets its own)
//		}
//		key <secret> {
//			account   <name>
//			id        <public-id>
//			models    <glob...>
//			allow_ips <ip|cidr...>
//			expires   <RFC 3339 time>
//			disabled
//			quota     <units>
//			rate      <requests> <window>
//			max_active_tasks <n>
//			budget    <amount> [day|month]
//		}
//		watcher {
//			interval    <duration>
//			concurrency <n>
//			max_rps     <n>
//		}
//		callbacks {
//			secret         <whsec_…>
//			allow_private
//			retry_schedule <duration...>
//			concurrency    <n>
//			per_host       <n>
//			attempt_timeout <duration>
//			relay_base     <public base URL>
//		}
//		upload {
//			bucket            <name>
//			region            <region>
//			endpoint          <url>
//			path_style
//			access_key_id     <id>
//			secret_access_key <secret>
//			public_base_url   <url>
//			prefix            <key-prefix>
//			expires           <duration>
//			allowed_content_types <type/subtype|type/*...>
//			rate_limit        <count> <window> | off
//		}
//	}
//
// Secrets are best written as {env.NAME} or {file.path}; they are expanded when the config loads.
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	if existing != nil {
		return nil, d.Err("the mediagw global option may appear only once")
	}
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "mediagw", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile reads the mediagw global option; see parseGlobalOption for the syntax.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "mediagw"
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	modelOwner := map[string]string{} // model -> provider, to refuse a model served twice
	secrets := map[string]bool{}
	priceAt := map[string]error{} // model -> the error, at its price block, if no provider serves it
	for d.NextBlock(0) {
		name := d.Val()
		once := name != "provider" && name != "key" && name != "price"
		if once && seen[name] {
			return d.Errf("duplicate subdirective %q", name)
		}
		seen[name] = true
		switch name {
		case "storage":
			if !d.NextArg() {
				return d.Err("usage: storage <backend> [<args…>], e.g. storage badger <dir>")
			}
			backend := d.Val()
			if _, err := caddy.GetModule("mediagw.storage." + backend); err != nil {
				return d.Errf("storage: unknown backend %q; usage: storage badger [<dir>]", backend)
			}
			mod, err := caddyfile.UnmarshalModule(d, "mediagw.storage."+backend)
			if err != nil {
				return d.Errf("storage %s: %v", backend, err)
			}
			a.StorageRaw = caddyconfig.JSONModuleObject(mod, "module", backend, nil)
		case "task_retention":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("task_retention: invalid duration %q", s)
			}
			a.TaskRetention = caddy.Duration(dur)
		case "hold_reconcile_interval":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("hold_reconcile_interval: invalid duration %q", s)
			}
			a.HoldReconcileInterval = caddy.Duration(dur)
		case "idempotency_lease":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur < idempotency.MinLease {
				return d.Errf("idempotency_lease: invalid duration %q (at least %v)", s, idempotency.MinLease)
			}
			a.IdempotencyLease = caddy.Duration(dur)
		case "answer_memory":
			if err := sizeArg(d, &a.AnswerMemory); err != nil {
				return err
			}
		case "answer_memory_per_account":
			if err := sizeArg(d, &a.AnswerMemoryPerAccount); err != nil {
				return err
			}
		case "refund_unsuccessful_tasks":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.RefundUnsuccessfulTasks = true
		case "account_metrics":
			var v string
			if !d.AllArgs(&v) || (v != "on" && v != "off") {
				return d.Err("usage: account_metrics on|off")
			}
			a.NoAccountMetrics = v == "off"
		case "upstream_proxy_from_env":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.UpstreamProxyFromEnv = true
		case "disabled_accounts":
			a.DisabledAccounts = d.RemainingArgs()
			if len(a.DisabledAccounts) == 0 {
				return d.ArgErr()
			}
		case "provider":
			p, err := parseProvider(d)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(a.Providers, func(o ProviderConfig) bool { return o.Name == p.Name }) {
				return d.Errf("provider %q is defined twice", p.Name)
			}
			for _, m := range servedModels(p) {
				if other, ok := modelOwner[m]; ok {
					return d.Errf("model %q is served by two providers: %q and %q", m, other, p.Name)
				}
				modelOwner[m] = p.Name
			}
			a.Providers = append(a.Providers, p)
		case "watcher":
			w, err := parseWatcher(d)
			if err != nil {
				return err
			}
			a.Watcher = w
		case "callbacks":
			c, err := parseCallbacks(d)
			if err != nil {
				return err
			}
			a.Callbacks = c
		case "upload":
			u, err := parseUpload(d)
			if err != nil {
				return err
			}
			a.Upload = u
		case "currency":
			if !d.AllArgs(&a.Currency) {
				return d.Err("usage: currency <code>, e.g. currency USD")
			}
		case "price":
			p, err := parsePrice(d)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(a.Prices, func(o billing.Price) bool { return o.Model == p.Model }) {
				return d.Errf("price %q is given twice", p.Model)
			}
			priceAt[p.Model] = d.Errf("price %q: no provider serves the model: add it to a provider's models, or correct the name", p.Model)
			a.Prices = append(a.Prices, p)
		case "key":
			k, err := parseKey(d)
			if err != nil {
				return err
			}
			if secrets[k.Key] {
				return d.Errf("duplicate key: the same secret (or placeholder) is configured twice; give each key its own")
			}
			secrets[k.Key] = true
			a.Keys = append(a.Keys, k)
		default:
			return unknownSubdirective(d, "mediagw: ", globalSubdirectives)
		}
	}
	for _, p := range a.Prices {
		if _, served := modelOwner[p.Model]; !served {
			return priceAt[p.Model]
		}
	}
	return nil
}

// The subdirectives of the mediagw global option and of its provider and key blocks, for the
// error that names a misspelt one.
var (
	globalSubdirectives = []string{"storage", "task_retention", "disabled_accounts", "refund_unsuccessful_tasks",
		"account_metrics", "upstream_proxy_from_env", "provider", "key", "watcher", "callbacks", "upload",
		"currency", "price", "hold_reconcile_interval", "idempotency_lease", "answer_memory", "answer_memory_per_account"}
	providerSubdirectives = []string{"base_url", "api_key", "upstream", "auth_style", "protocol", "access_key", "secret_key", "models", "model_map", "cost", "max_rps", "tool_image_model", "omit_stream_options"}
	keySubdirectives      = []string{"account", "id", "models", "allow_ips", "expires", "disabled", "quota", "rate", "max_active_tasks", "budget"}
)

func parseProvider(d *caddyfile.Dispenser) (ProviderConfig, error) {
	var p ProviderConfig
	if !d.NextArg() {
		return p, d.Err("provider needs a name")
	}
	p.Name = d.Val()
	if d.NextArg() {
		return p, d.ArgErr()
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] && sub != "models" && sub != "cost" && sub != "upstream" && sub != "model_map" {
			return p, d.Errf("provider %q: duplicate subdirective %q", p.Name, sub)
		}
		seen[sub] = true
		switch sub {
		case "base_url":
			if !d.AllArgs(&p.BaseURL) {
				return p, d.ArgErr()
			}
		case "api_key":
			if !d.AllArgs(&p.APIKey) {
				return p, d.ArgErr()
			}
		case "auth_style":
			if !d.AllArgs(&p.AuthStyle) {
				return p, d.ArgErr()
			}
			if !slices.Contains([]string{"bearer", "x-api-key", "x-goog-api-key"}, p.AuthStyle) {
				return p, d.Errf("provider %q: auth_style must be bearer, x-api-key or x-goog-api-key", p.Name)
			}
		case "access_key":
			if !d.AllArgs(&p.AccessKey) {
				return p, d.ArgErr()
			}
		case "secret_key":
			if !d.AllArgs(&p.SecretKey) {
				return p, d.ArgErr()
			}
		case "max_rps":
			if err := rateArg(d, &p.MaxRPS); err != nil {
				return p, err
			}
		case "tool_image_model":
			if !d.AllArgs(&p.ToolImageModel) {
				return p, d.ArgErr()
			}
		case "omit_stream_options":
			if d.NextArg() {
				return p, d.ArgErr()
			}
			p.OmitStreamOptions = true
		case "protocol":
			if !d.AllArgs(&p.Protocol) {
				return p, d.ArgErr()
			}
			if !slices.Contains(videotask.Protocols(), p.Protocol) {
				return p, d.Errf("provider %q: unknown protocol %q: use one of %s", p.Name, p.Protocol, strings.Join(videotask.Protocols(), ", "))
			}
		case "cost":
			args := d.RemainingArgs()
			model, units := "*", ""
			switch len(args) {
			case 1:
				units = args[0]
			case 2:
				model, units = args[0], args[1]
			default:
				return p, d.Errf("provider %q: usage: cost [<model>] <units>", p.Name)
			}
			n, err := strconv.ParseInt(units, 10, 64)
			if err != nil || n < 0 {
				return p, d.Errf("provider %q: cost must be a whole number, 0 or more", p.Name)
			}
			if p.Costs == nil {
				p.Costs = map[string]int64{}
			}
			if _, dup := p.Costs[model]; dup {
				return p, d.Errf("provider %q: cost of %q is set twice", p.Name, model)
			}
			p.Costs[model] = n
		case "upstream":
			u, err := parseUpstream(d, p.Name)
			if err != nil {
				return p, err
			}
			if slices.ContainsFunc(p.Upstreams, func(o UpstreamConfig) bool { return o.Name == u.Name }) {
				return p, d.Errf("provider %q: upstream %q is defined twice", p.Name, u.Name)
			}
			p.Upstreams = append(p.Upstreams, u)
		case "model_map":
			var client, up string
			if !d.AllArgs(&client, &up) {
				return p, d.Errf("provider %q: usage: model_map <client-model-id> <upstream-model-id>", p.Name)
			}
			if _, dup := p.ModelMap[client]; dup {
				return p, d.Errf("provider %q: model_map of %q is set twice", p.Name, client)
			}
			if p.ModelMap == nil {
				p.ModelMap = map[string]string{}
			}
			p.ModelMap[client] = up
		case "models":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return p, d.ArgErr()
			}
			for _, m := range args {
				if slices.Contains(p.Models, m) {
					return p, d.Errf("provider %q: model %q is listed twice", p.Name, m)
				}
				p.Models = append(p.Models, m)
			}
		default:
			return p, unknownSubdirective(d, fmt.Sprintf("provider %q: ", p.Name), providerSubdirectives)
		}
	}
	switch {
	case len(p.Upstreams) > 0 && (p.BaseURL != "" || p.APIKey != "" || p.AccessKey != "" || p.SecretKey != ""):
		return p, d.Errf("provider %q: give base_url and api_key inside each upstream block, not beside them", p.Name)
	case len(p.Upstreams) == 0 && p.BaseURL == "":
		return p, d.Errf("provider %q: base_url is required: add `base_url <url>`, the provider's API address with its path prefix (such as https://api.openai.com/v1), or upstream blocks", p.Name)
	case len(servedModels(p)) == 0:
		return p, d.Errf("provider %q: no models: add `models <model-id…>` with the ids it serves (requests name a model, and go to the provider that lists it)", p.Name)
	}
	for model := range p.Costs {
		if model != "*" && !slices.Contains(servedModels(p), model) {
			return p, d.Errf("provider %q: cost of %q, a model it does not serve: add it to models, or correct the name", p.Name, model)
		}
	}
	return p, nil
}

// parseUpstream reads one upstream block of a provider.
func parseUpstream(d *caddyfile.Dispenser, provider string) (UpstreamConfig, error) {
	var u UpstreamConfig
	if !d.NextArg() {
		return u, d.Errf("provider %q: upstream needs a name", provider)
	}
	u.Name = d.Val()
	if d.NextArg() {
		return u, d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"base_url":   func() error { return stringArg(d, &u.BaseURL) },
		"api_key":    func() error { return stringArg(d, &u.APIKey) },
		"access_key": func() error { return stringArg(d, &u.AccessKey) },
		"secret_key": func() error { return stringArg(d, &u.SecretKey) },
		"weight":     func() error { return positiveIntArg(d, &u.Weight) },
		"max_rps":    func() error { return rateArg(d, &u.MaxRPS) },
		"priority": func() error {
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return d.Errf("priority must be a whole number, 0 or more")
			}
			u.Priority = n
			return nil
		},
	})
	if err != nil {
		return u, err
	}
	if u.BaseURL == "" {
		return u, d.Errf("provider %q: upstream %q: base_url is required", provider, u.Name)
	}
	return u, nil
}

// servedModels are the model ids a provider serves: its models and its model_map's client ids.
func servedModels(p ProviderConfig) []string {
	served := slices.Clone(p.Models)
	for m := range p.ModelMap {
		if !slices.Contains(served, m) {
			served = append(served, m)
		}
	}
	slices.Sort(served[len(p.Models):])
	return served
}

func parseKey(d *caddyfile.Dispenser) (StaticKey, error) {
	var k StaticKey
	if !d.NextArg() {
		return k, d.Err("key needs a secret, e.g. key {env.MEDIAGW_KEY} { account <name> }")
	}
	k.Key = d.Val()
	if d.NextArg() {
		return k, d.ArgErr()
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return k, d.Errf("key: duplicate subdirective %q", sub)
		}
		seen[sub] = true
		switch sub {
		case "account":
			if !d.AllArgs(&k.Account) {
				return k, d.ArgErr()
			}
		case "id":
			if !d.AllArgs(&k.ID) {
				return k, d.ArgErr()
			}
		case "models":
			if k.Models = d.RemainingArgs(); len(k.Models) == 0 {
				return k, d.ArgErr()
			}
		case "allow_ips":
			if k.AllowIPs = d.RemainingArgs(); len(k.AllowIPs) == 0 {
				return k, d.ArgErr()
			}
			for _, s := range k.AllowIPs {
				if _, err := auth.ParseIPRange(s); err != nil {
					return k, d.Errf("key: allow_ips: %v", err)
				}
			}
		case "expires":
			if !d.AllArgs(&k.Expires) {
				return k, d.ArgErr()
			}
			if _, err := storage.ParseKeyExpiry(k.Expires); err != nil {
				return k, d.Errf("key: %v", err)
			}
		case "disabled":
			if d.NextArg() {
				return k, d.ArgErr()
			}
			k.Disabled = true
		case "quota":
			var s string
			if !d.AllArgs(&s) {
				return k, d.ArgErr()
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return k, d.Errf("key: quota must be a whole number of cost units, 0 or more")
			}
			k.Quota = &n
		case "rate":
			var count, window string
			if !d.AllArgs(&count, &window) {
				return k, d.ArgErr()
			}
			n, err := strconv.Atoi(count)
			dur, derr := caddy.ParseDuration(window)
			if err != nil || n < 1 || derr != nil || dur <= 0 {
				return k, d.Errf("key: usage: rate <requests> <window>, e.g. rate 60 1m")
			}
			k.RateRequests, k.RateWindow = n, caddy.Duration(dur)
		case "budget":
			if err := budgetArgs(d, "key", &k.Budget, &k.BudgetPeriod); err != nil {
				return k, err
			}
		case "max_active_tasks":
			var s string
			if !d.AllArgs(&s) {
				return k, d.ArgErr()
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 1 {
				return k, d.Errf("key: max_active_tasks must be a positive whole number")
			}
			k.MaxActiveTasks = n
		default:
			return k, unknownSubdirective(d, "key: ", keySubdirectives)
		}
	}
	if k.Account == "" {
		return k, d.Err("key: account is required: add `account <name>` to the key's block (every key, and every task made with it, belongs to an account)")
	}
	return k, nil
}

func parseUpload(d *caddyfile.Dispenser) (*UploadConfig, error) {
	u := new(UploadConfig)
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"bucket":            func() error { return stringArg(d, &u.Bucket) },
		"region":            func() error { return stringArg(d, &u.Region) },
		"endpoint":          func() error { return stringArg(d, &u.Endpoint) },
		"access_key_id":     func() error { return stringArg(d, &u.AccessKeyID) },
		"secret_access_key": func() error { return stringArg(d, &u.SecretAccessKey) },
		"public_base_url":   func() error { return stringArg(d, &u.PublicBaseURL) },
		"prefix":            func() error { return stringArg(d, &u.Prefix) },
		"expires":           func() error { return durationArg(d, &u.Expires) },
		"keep_results": func() error {
			var err error
			u.KeepResults, err = parseKeepResults(d)
			return err
		},
		"path_style": func() error {
			if d.NextArg() {
				return d.ArgErr()
			}
			u.PathStyle = true
			return nil
		},
		"allowed_content_types": func() error {
			if u.AllowedContentTypes = d.RemainingArgs(); len(u.AllowedContentTypes) == 0 {
				return d.ArgErr()
			}
			return nil
		},
		"rate_limit": func() error {
			args := d.RemainingArgs()
			switch {
			case len(args) == 1 && args[0] == "off":
				u.RateLimit = &UploadRateLimit{Disabled: true}
			case len(args) == 2:
				n, err := strconv.Atoi(args[0])
				window, werr := caddy.ParseDuration(args[1])
				if err != nil || n < 1 || werr != nil || window <= 0 {
					return d.Errf("rate_limit: want a positive count and a window, e.g. rate_limit 100 60s")
				}
				u.RateLimit = &UploadRateLimit{Requests: n, Window: caddy.Duration(window)}
			default:
				return d.Err("usage: rate_limit <count> <window> | off")
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if u.Bucket == "" {
		return nil, d.Err("upload: bucket is required")
	}
	if (u.AccessKeyID == "") != (u.SecretAccessKey == "") {
		return nil, d.Err("upload: give both access_key_id and secret_access_key, or neither")
	}
	return u, nil
}

func parseWatcher(d *caddyfile.Dispenser) (*WatcherConfig, error) {
	w := new(WatcherConfig)
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"interval":    func() error { return durationArg(d, &w.Interval) },
		"concurrency": func() error { return positiveIntArg(d, &w.Concurrency) },
		"max_rps": func() error {
			var n int
			err := positiveIntArg(d, &n)
			w.MaxRPS = float64(n)
			return err
		},
	})
	return w, err
}

func parseCallbacks(d *caddyfile.Dispenser) (*CallbacksConfig, error) {
	c := new(CallbacksConfig)
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"secret":          func() error { return stringArg(d, &c.Secret) },
		"relay_base":      func() error { return stringArg(d, &c.RelayBase) },
		"concurrency":     func() error { return positiveIntArg(d, &c.Concurrency) },
		"per_host":        func() error { return positiveIntArg(d, &c.PerHost) },
		"attempt_timeout": func() error { return durationArg(d, &c.AttemptTimeout) },
		"allow_private": func() error {
			if d.NextArg() {
				return d.ArgErr()
			}
			c.AllowPrivate = true
			return nil
		},
		"retry_schedule": func() error {
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			for _, s := range args {
				dur, err := caddy.ParseDuration(s)
				if err != nil || dur <= 0 {
					return d.Errf("retry_schedule: invalid duration %q", s)
				}
				c.RetrySchedule = append(c.RetrySchedule, caddy.Duration(dur))
			}
			return nil
		},
	})
	return c, err
}
