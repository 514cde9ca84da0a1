// Package console is mediagw's web console: server-rendered pages for operators (every account,
// key and task) and for the members of one account (the account portal: only that account).
//
// Pages are html/template, so every value from the store (account names, model ids, prompts,
// callback URLs) is escaped where it is written; there is no script. Console users come from
// the configuration with bcrypt password hashes; sessions are random tokens held in the store's
// leases, so they work across instances and end at logout or after SessionIdle without use;
// every state change is a POST that carries the session's CSRF token, and the login form carries
// a token bound to a pre-session cookie (login CSRF). Lists are paged through the store's
// indexes: no page reads every key, account or task.
package console

import (
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

//go:embed templates/*.html
var templateFiles embed.FS

// assets are the stylesheet, uPlot (its unmodified release build, MIT licence in
// assets/uplot.LICENSE) and the script that draws the charts with it.
//
//go:embed assets/console.css assets/uplot.iife.min.js assets/uplot.min.css assets/charts.js
var assets embed.FS

// assetTypes are the content types of the files served under /assets/.
var assetTypes = map[string]string{
	"console.css":       "text/css; charset=utf-8",
	"uplot.min.css":     "text/css; charset=utf-8",
	"uplot.iife.min.js": "text/javascript; charset=utf-8",
	"charts.js":         "text/javascript; charset=utf-8",
}

// User is a console user. A user with an Account is a member of that account and sees only it;
// a user without one is an operator.
type User struct {
	Name string
	// PasswordHash is a bcrypt hash ($2a$, $2b$ or $2y$). A key session's user (keyUser) carries
	// the stored hash of its key's secret here instead, which only its session's lease owner
	// reads (leaseOwner): it is never compared with a password.
	PasswordHash []byte
	// Account, when set, confines the user to that account.
	Account string
	// KeyID is set for a member who logged in with an API key of Account (not a configured
	// user): the session lasts while that key is active.
	KeyID string
	// Key is that key as this request read it (nil for a configured user, and at login). A key
	// restricted to some models shows only the account's tasks of those models (seesTask), and
	// bounds the keys its member creates (memberKeySpec).
	Key *keyadmin.KeyView
}

// Operator reports whether the user sees every account.
func (u User) Operator() bool { return u.Account == "" }

// Handler serves the console's pages at the root of its site.
type Handler struct {
	// Store keeps sessions (as leases), login rate windows, tasks and keys.
	Store storage.Store
	// Keys makes key and account changes exactly as the admin API makes them.
	Keys *keyadmin.Handler
	// Usage serves the usage CSV (the admin API's report handler); nil: no export.
	Usage UsageReport
	// Totals reads the usage day totals that the daily charts show; nil: no daily charts.
	Totals UsageTotals
	// Charts keeps the recent history of the gateway's metrics that the overview charts; nil:
	// no recent charts.
	Charts *Sampler
	// Users by name.
	Users map[string]User
	// SessionIdle ends a session unused for this long; SessionMax ends any session this long
	// after its login. Defaults: 30 minutes and 12 hours.
	SessionIdle, SessionMax time.Duration
	// MemberKeys, when set, lets members create keys in their account within its limits; nil:
	// members cannot create keys (they can revoke their account's).
	MemberKeys *MemberKeys
	// Logger receives logins, failed logins and every change, with the user who made it.
	Logger *zap.Logger
	// Gateway is the base URL of the gateway that the playground creates tasks through, as a
	// client would; empty: no playground.
	Gateway string
	// KeyAuth checks the API keys that members log in with; nil: no login with a key.
	KeyAuth KeyAuthenticator
	// ForwardedAllowed reports whether a request that came through a trusted proxy names only
	// addresses a key's allow_ips allow, as mediagw_auth requires (the leftmost forwarded address,
	// Caddy's client address without trusted_proxies_strict, is the client's to write); nil:
	// the client address alone decides.
	ForwardedAllowed func(*http.Request, auth.Identity) bool
	// Prices is the gateway's price table (the price directives); nil prices nothing.
	Prices *billing.Table
	// Models lists the models the playground offers; Upstreams the upstreams and their health.
	Models    func() []string
	Upstreams func() []providers.UpstreamState
	// ClientIP returns the client's address as the server determined it (behind trusted
	// proxies); nil: the connection's address.
	ClientIP func(*http.Request) string
	// Now is the clock. Default: time.Now.
	Now func() time.Time

	pages map[string]*template.Template
	// refusalHashes are compared against when a login is refused, by bcrypt cost, so that a
	// wrong password and a name that is no user are refused after as much work (refusalHashes).
	refusalHashes map[int][]byte
}

// UsageReport writes a usage report for the request's query, counting only the models
// modelAllowed allows (nil: every model; see usage.Recorder.ServeReportOf).
type UsageReport interface {
	ServeReportOf(w http.ResponseWriter, r *http.Request, modelAllowed func(model string) bool)
}

// Provision parses the templates; call it once before serving.
func (h *Handler) Provision() error {
	if h.SessionIdle <= 0 {
		h.SessionIdle = 30 * time.Minute
	}
	if h.SessionMax <= 0 {
		h.SessionMax = 12 * time.Hour
	}
	if h.Logger == nil {
		h.Logger = zap.NewNop()
	}
	pages, err := parsePages()
	if err != nil {
		return err
	}
	h.pages = pages
	h.refusalHashes, err = refusalHashes(h.Users)
	return err
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// crossOrigin refuses a POST that a browser sends from another site (Sec-Fetch-Site, or an
// Origin other than the request's host), before anything reads it. It adds to the tokens: the
// session's CSRF token guards the forms of a session, the pre-session token (login_csrf.go) the
// login form (a login from another site would put the victim's browser in the attacker's
// session), and this guards both where a browser sends those headers.
var crossOrigin = http.NewCrossOriginProtection()

// maxForm bounds the body of a console request: its forms are small.
const maxForm = 64 << 10

// serveAsset writes an embedded asset.
func (h *Handler) serveAsset(w http.ResponseWriter, name string) {
	body, err := assets.ReadFile("assets/" + name)
	if err != nil { // every name in assetTypes is embedded: a test reads each
		http.Error(w, "no such asset", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", assetTypes[name])
	w.Header().Set("Cache-Control", "max-age=3600")
	if _, err := w.Write(body); err != nil {
		return // the client went away
	}
}

// ServeHTTP routes a console request. Every page but the login page and the assets needs a
// session; every POST needs the session's CSRF token. Every query and form is read strictly
// (strictRequest).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src *; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if err := crossOrigin.Check(r); err != nil {
		h.render(w, http.StatusForbidden, "error", page{Title: "Forbidden", Error: "This form did not come from the console's own pages."})
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/assets/") && assetTypes[strings.TrimPrefix(path, "/assets/")] != "":
		h.serveAsset(w, strings.TrimPrefix(path, "/assets/"))
		return
	case path == "/login":
		h.serveLogin(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	s, ok := h.session(w, r)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	if msg := strictRequest(r); msg != "" {
		h.fail(w, r, s, http.StatusBadRequest, msg+" Nothing was changed.")
		return
	}
	if r.Method == http.MethodPost && !s.validCSRF(r.PostFormValue("csrf")) {
		h.fail(w, r, s, http.StatusForbidden, "This form has expired or did not come from the console. Reload the page and try again.")
		return
	}
	parts, ok := segments(r.URL)
	if !ok {
		h.notFound(w, r, s)
		return
	}
	h.route(w, r, s, parts)
}

// segments splits the request's path as the client wrote it, then decodes each segment, so that
// a name holding a slash (written %2F, as the pages link it) is one segment.
func segments(u *url.URL) ([]string, bool) {
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	for i, p := range parts {
		var err error
		if parts[i], err = url.PathUnescape(p); err != nil {
			return nil, false
		}
	}
	return parts, true
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request, s *session, parts []string) {
	get, post := r.Method == http.MethodGet || r.Method == http.MethodHead, r.Method == http.MethodPost
	switch {
	case parts[0] == "" && get:
		h.overview(w, r, s)
	case parts[0] == "logout" && len(parts) == 1 && post:
		h.logout(w, r, s)
	case parts[0] == "accounts" && len(parts) == 1 && get:
		h.accounts(w, r, s)
	case parts[0] == "accounts" && len(parts) == 2 && get:
		h.account(w, r, s, parts[1])
	case parts[0] == "accounts" && len(parts) == 3 && post && (parts[2] == "disable" || parts[2] == "enable"):
		h.setDisabled(w, r, s, parts[1], parts[2] == "disable")
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "ledger.csv" && get:
		h.ledgerCSV(w, r, s, parts[1])
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "credit" && post:
		h.credit(w, r, s, parts[1])
	case parts[0] == "keys" && len(parts) == 1 && get:
		h.keys(w, r, s)
	case parts[0] == "keys" && len(parts) == 1 && post:
		h.createKey(w, r, s)
	case parts[0] == "keys" && len(parts) == 3 && parts[2] == "revoke" && post:
		h.revokeKey(w, r, s, parts[1])
	case parts[0] == "tasks" && len(parts) == 1 && get:
		h.tasks(w, r, s)
	case parts[0] == "tasks" && len(parts) == 2 && get:
		h.task(w, r, s, parts[1])
	case parts[0] == "upstreams" && len(parts) == 1 && get && s.user.Operator() && h.Upstreams != nil:
		h.show(w, s, "upstreams", "Upstreams", h.Upstreams())
	case parts[0] == "playground" && len(parts) == 1 && get:
		h.playground(w, r, s)
	case parts[0] == "playground" && len(parts) == 1 && post:
		h.createPlaygroundTask(w, r, s)
	case parts[0] == "prices" && len(parts) == 1 && get:
		h.prices(w, r, s)
	case parts[0] == "usage.csv" && len(parts) == 1 && get:
		h.usageCSV(w, r, s)
	default:
		h.fail(w, r, s, http.StatusNotFound, "There is no such page.")
	}
}

// audit records a change made through the console, with the user who made it.
func (h *Handler) audit(s *session, action, target string) {
	h.Logger.Info("console change", zap.String("user", s.user.Name), zap.String("user_account", s.user.Account),
		zap.String("action", action), zap.String("target", target))
}
