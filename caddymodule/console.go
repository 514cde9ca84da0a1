package caddymodule

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"golang.org/x/crypto/bcrypt"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/console"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(ConsoleHandler{})
}

// ConsoleHandler serves mediagw's web console at the root of its site: operators see and change
// every account, key and task; a user bound to an account (the account portal) sees only that
// account. It has its own users, sessions and CSRF tokens and never exposes Caddy's admin
// endpoint. Put it on a site of its own, so that it gets Caddy's automatic HTTPS:
//
//	console.example.com {
//		mediagw_console {
//			user admin {env.MEDIAGW_ADMIN_HASH}
//			user alice {env.ALICE_HASH} account acme
//		}
//	}
//
// Its pages are server-rendered HTML with one embedded stylesheet: nothing is loaded from
// elsewhere, and building the gateway needs no Node.
type ConsoleHandler struct {
	// Users who may log in. Password hashes are bcrypt (`caddy mediagw hash-password` or
	// `caddy hash-password` makes one); write them as {env.NAME} or {file.path} so that they
	// stay out of the JSON config.
	Users []ConsoleUser `json:"users,omitempty"`
	// Playground is the base URL of the gateway (a site with mediagw_auth and
	// mediagw_video_tasks) that the playground creates tasks through, as any client does, for
	// example https://api.example.com, or http://127.0.0.1:8080 for a gateway on the same host.
	// It must be https unless its host is a loopback address or localhost: the API keys typed
	// into the playground go to it. Empty: no playground.
	Playground string `json:"playground,omitempty"`
	// MemberKeys lets members (users with an account) create keys in their account, each with
	// these limits. Without it members cannot create keys; they can revoke their account's.
	MemberKeys *ConsoleMemberKeys `json:"member_keys,omitempty"`
	// SessionIdle ends a session unused for this long. Default: 30m.
	SessionIdle caddy.Duration `json:"session_idle,omitempty"`
	// SessionMax ends every session this long after its login. Default: 12h.
	SessionMax caddy.Duration `json:"session_max,omitempty"`
	// ChartInterval is how often the overview's recent charts sample the gateway's metrics;
	// they keep 180 samples. Default: 1m (three hours).
	ChartInterval caddy.Duration `json:"chart_interval,omitempty"`

	console *console.Handler
}

// ConsoleUser is one console user.
type ConsoleUser struct {
	Name string `json:"name"`
	// PasswordHash is a bcrypt hash, or a placeholder that expands to one.
	PasswordHash string `json:"password_hash"`
	// Account, when set, confines the user to that account (the account portal): its usage,
	// tasks and keys, which the user may create and revoke.
	Account string `json:"account,omitempty"`
}

// ConsoleMemberKeys are the limits of the keys that members create. A member cannot change
// them: every key they create carries them. A member logged in with an API key creates keys no
// looser than that key: its budget (or quota), rate and max_active_tasks replace these where
// they are tighter, and a budget that neither bounds is refused (docs/console.md).
type ConsoleMemberKeys struct {
	// Max is the most keys an account may hold (configured keys aside) for a member to create
	// another. Default: 10.
	Max int `json:"max,omitempty"`
	// Budget is the money each key may spend, in the gateway's currency, as a sub-limit of
	// its account's balance (as a key's budget in the configuration and the admin API).
	// A decimal string as entered ("25"; no '+'). Default: none.
	Budget billing.EnteredMoney `json:"budget,omitempty"`
	// BudgetPeriod makes Budget per UTC calendar "day" or "month". Default: for all time.
	BudgetPeriod string `json:"budget_period,omitempty"`
	// Quota is the older form of Budget, kept as its alias: a quota of n is a budget of n whole
	// units for all time. Give Budget or Quota, not both. Default: none.
	Quota *int64 `json:"quota,omitempty"`
	// MaxActiveTasks is each key's limit of unfinished tasks; unset: none.
	MaxActiveTasks *int64 `json:"max_active_tasks,omitempty"`
	// CreatesPerHour is the most keys the members of one account may create in any hour,
	// across every instance, so that revoking and creating keys cannot churn them. Default: 10.
	CreatesPerHour int `json:"creates_per_hour,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (ConsoleHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_console",
		New: func() caddy.Module { return new(ConsoleHandler) },
	}
}

// Provision expands and checks the users' hashes and finds the mediagw app.
func (h *ConsoleHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	repl := caddy.NewReplacer()
	users := map[string]console.User{}
	for _, u := range h.Users {
		hash, err := expandRequired(repl, "mediagw_console user "+u.Name, u.PasswordHash)
		if err != nil {
			return err
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return fmt.Errorf("mediagw_console user %s: the password hash is not a bcrypt hash (make one with caddy mediagw hash-password)", u.Name)
		}
		users[u.Name] = console.User{Name: u.Name, PasswordHash: []byte(hash), Account: u.Account}
	}
	h.console = &console.Handler{
		Store: app.store,
		Keys: &keyadmin.Handler{Store: app.store, Static: app.staticByID, DisabledAccounts: app.disabledAccts,
			Meter: app.accountant.Meter, WebhookKey: app.runtime.key},
		Usage:  app.usage,
		Totals: app.usage,
		Charts: &console.Sampler{Gatherer: ctx.GetMetricsRegistry(), Interval: time.Duration(h.ChartInterval),
			Logger: ctx.Logger()},
		Users:       users,
		SessionIdle: time.Duration(h.SessionIdle),
		SessionMax:  time.Duration(h.SessionMax),
		Logger:      ctx.Logger(),
		ClientIP:    consoleClientIP,
		Gateway:     strings.TrimRight(h.Playground, "/"),
		Models:      app.Catalog().Models,
		Prices:      app.PriceTable(),
		KeyAuth:     app.Authenticator(),
		// The key's allow_ips as mediagw_auth applies them, forwarded addresses included.
		ForwardedAllowed: forwardedAllowed,
		Upstreams: func() []providers.UpstreamState {
			var list []providers.UpstreamState
			for _, p := range app.Catalog().Providers() {
				for _, u := range p.Upstreams {
					list = append(list, app.Catalog().Health().State(u))
				}
			}
			return list
		},
	}
	if m := h.MemberKeys; m != nil {
		h.console.MemberKeys = &console.MemberKeys{Max: m.Max, Quota: m.Quota, MaxActiveTasks: m.MaxActiveTasks, CreatesPerHour: m.CreatesPerHour}
		if m.Max == 0 {
			h.console.MemberKeys.Max = 10
		}
		if m.CreatesPerHour == 0 {
			h.console.MemberKeys.CreatesPerHour = 10
		}
		if m.Budget > 0 {
			h.console.MemberKeys.Budget = &keyadmin.Budget{Amount: billing.Money(m.Budget), Period: m.BudgetPeriod}
		}
	}
	if err := h.console.Provision(); err != nil {
		return err
	}
	h.console.Charts.Start()
	return nil
}

// Cleanup stops sampling the metrics for the charts.
func (h *ConsoleHandler) Cleanup() error {
	if h.console != nil && h.console.Charts != nil {
		h.console.Charts.Stop()
	}
	return nil
}

// checkPlayground refuses a playground URL that is not an http(s) base URL, and a plain-http one
// to anything but a loopback address: the playground sends the API key a user types to that URL,
// which over plain http would cross the network in clear.
func checkPlayground(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) base URL", raw)
	}
	if u.Scheme == "https" || loopbackHost(u.Hostname()) {
		return nil
	}
	secure := *u
	secure.Scheme = "https"
	return fmt.Errorf("%s would carry the API keys typed into the playground across the network in clear: "+
		"write %s, or an http URL of a loopback address (http://127.0.0.1:<port>) for a gateway on this host", raw, secure.String())
}

// loopbackHost reports whether host, a URL's host name, is a loopback address or localhost.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Validate refuses a console without users, users named twice and a playground URL that is not
// an https base URL (or an http one of a loopback address).
func (h *ConsoleHandler) Validate() error {
	if len(h.Users) == 0 {
		return fmt.Errorf("mediagw_console needs at least one user")
	}
	if h.Playground != "" {
		if err := checkPlayground(h.Playground); err != nil {
			return fmt.Errorf("mediagw_console playground: %v", err)
		}
	}
	if m := h.MemberKeys; m != nil {
		if m.Max < 0 || m.CreatesPerHour < 0 || (m.Quota != nil && *m.Quota < 1) || (m.MaxActiveTasks != nil && *m.MaxActiveTasks < 1) {
			return fmt.Errorf("mediagw_console member_keys: max, creates_per_hour, quota and max_active_tasks must be at least 1")
		}
		if m.Budget < 0 || int64(m.Budget) > storage.MaxAmount || (m.BudgetPeriod != "" && m.Budget == 0) ||
			(m.BudgetPeriod != storage.BudgetTotal && m.BudgetPeriod != storage.BudgetDay && m.BudgetPeriod != storage.BudgetMonth) {
			return fmt.Errorf("mediagw_console member_keys: budget must be an amount above 0, per day, month or for all time")
		}
		if m.Budget > 0 && m.Quota != nil {
			return fmt.Errorf("mediagw_console member_keys: quota is an alias of a budget for all time: give budget or quota, not both")
		}
	}
	seen := map[string]bool{}
	for _, u := range h.Users {
		if u.Name == "" || strings.ContainsAny(u.Name, " \t\r\n") {
			return fmt.Errorf("mediagw_console: a user name must be one word")
		}
		if strings.Contains(u.Name, ":") {
			// "key:<id>" names a member logged in with an API key, in the log and on the pages.
			return fmt.Errorf("mediagw_console: user %s: a user name must not contain a colon", u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("mediagw_console: user %s is named twice", u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

func (h *ConsoleHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.console.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	mediagw_console [<matcher>] {
//		user <name> <bcrypt_hash> [account <account>]
//		playground <gateway_url>
//		member_keys {
//			max <n>
//			budget <amount> [day|month]
//			quota <n>
//			max_active_tasks <n>
//			creates_per_hour <n>
//		}
//		session_idle <duration>
//		session_max <duration>
//		chart_interval <duration>
//	}
func (h *ConsoleHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, map[string]func() error{
		"user": func() error {
			var u ConsoleUser
			args := d.RemainingArgs()
			switch {
			case len(args) == 2:
			case len(args) == 4 && args[2] == "account":
				u.Account = args[3]
			default:
				return d.Errf("user takes a name and a bcrypt hash, then optionally: account <name>")
			}
			u.Name, u.PasswordHash = args[0], args[1]
			h.Users = append(h.Users, u)
			return nil
		},
		"playground": func() error {
			if err := stringArg(d, &h.Playground); err != nil {
				return err
			}
			if err := checkPlayground(h.Playground); err != nil {
				return d.Errf("playground: %v", err)
			}
			return nil
		},
		"member_keys": func() error {
			if d.NextArg() {
				return d.ArgErr()
			}
			h.MemberKeys = &ConsoleMemberKeys{}
			return h.MemberKeys.unmarshal(d)
		},
		"session_idle":   func() error { return durationArg(d, &h.SessionIdle) },
		"session_max":    func() error { return durationArg(d, &h.SessionMax) },
		"chart_interval": func() error { return durationArg(d, &h.ChartInterval) },
	}, "user")
}

func (m *ConsoleMemberKeys) unmarshal(d *caddyfile.Dispenser) error {
	limit := func(dst **int64) func() error {
		return func() error {
			var n int
			if err := positiveIntArg(d, &n); err != nil {
				return err
			}
			*dst = new(int64(n))
			return nil
		}
	}
	return parseBlock(d, map[string]func() error{
		"max":              func() error { return positiveIntArg(d, &m.Max) },
		"quota":            limit(&m.Quota),
		"max_active_tasks": limit(&m.MaxActiveTasks),
		"creates_per_hour": func() error { return positiveIntArg(d, &m.CreatesPerHour) },
		"budget":           func() error { return budgetArgs(d, "member_keys", &m.Budget, &m.BudgetPeriod) },
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ConsoleHandler)(nil)
	_ caddy.Validator             = (*ConsoleHandler)(nil)
	_ caddy.CleanerUpper          = (*ConsoleHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*ConsoleHandler)(nil)
	_ caddyfile.Unmarshaler       = (*ConsoleHandler)(nil)
)

// consoleClientIP is Caddy's client address (trusted proxies honoured), or "" when it has none.
func consoleClientIP(r *http.Request) string {
	if ip := clientIP(r); ip.IsValid() {
		return ip.String()
	}
	return ""
}
