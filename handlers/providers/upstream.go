package providers

import (
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// DefaultUpstreamName names the upstream of a provider configured with the single base_url and
// api_key shorthand.
const DefaultUpstreamName = "default"

// Upstream is one account at a provider: an address and the credential that goes with it. A
// provider has one or more; they serve the same models.
type Upstream struct {
	// Name identifies the upstream within its provider, in config, task records, logs, the admin
	// API and the {mediagw.upstream_name} placeholder.
	Name string
	// BaseURL is the upstream's base address including its path prefix.
	BaseURL *url.URL
	// APIKey is the upstream's credential, already expanded from its placeholder.
	APIKey string
	// AuthStyle is one of AuthBearer (default), AuthXAPIKey, AuthGoogAPIKey, AuthKlingJWT; the
	// provider's.
	AuthStyle string
	// AccessKey and SecretKey are the credential of AuthKlingJWT (then APIKey is empty): each
	// request carries a JWT made of them, renewed before it expires.
	AccessKey, SecretKey string
	// Weight is the upstream's share of the requests among the healthy upstreams of its
	// priority. Default: 1.
	Weight int
	// Priority orders upstreams: the lowest number serves while any of its upstreams is
	// healthy. Default: 0.
	Priority int
	// MaxRPS bounds the calls per second the watcher makes to the upstream (this instance's);
	// zero: unbounded. See Take.
	MaxRPS float64

	provider string
	health   *Board
	key      string // healthKey, computed once
	// state is the upstream's record on stateBoard, found once; both are guarded by the
	// board's lock.
	state      *healthState
	stateBoard *Board
	// Computed once by prepare, for the request path: the credential header (its value slice is
	// shared by every request and never changed), the dial address and the origin.
	credName  string
	credValue []string
	jwt       *jwtSource // AuthKlingJWT's tokens
	secrets   []string   // CredentialsInto's answer for an upstream without jwt: its non-empty keys
	dial      string
	origin    string
	address   string // Address, computed once
	label     string // Label, computed once
	base      string // BaseURL without a trailing slash, for Endpoint
	pacing    *pacer // MaxRPS and the pause after a 429 (pacing.go)
}

// prepare computes what every request to u needs, before u is shared between requests.
func (u *Upstream) prepare() {
	u.key = ""
	u.healthKey()
	u.credName, u.credValue, u.jwt = "", nil, nil
	u.pacing = newPacer(u.MaxRPS)
	if u.AuthStyle == AuthKlingJWT {
		// The board's clock (Board.Now), which tests set; the board is linked after prepare.
		u.jwt = &jwtSource{accessKey: u.AccessKey, secretKey: u.SecretKey, now: u.Now}
	} else if u.APIKey != "" {
		h := http.Header{}
		setCredentials(h, u.APIKey, u.AuthStyle)
		for name, value := range h {
			u.credName, u.credValue = name, value[:1:1]
		}
	}
	u.secrets = nil
	if u.jwt == nil {
		var buf [4]string
		u.secrets = slices.Clone(u.credentialsInto(&buf)) // empty, not nil, for an upstream without a key
	}
	u.dial, u.origin, u.address, u.label, u.base = "", "", "", "", ""
	u.dial, u.origin, u.address, u.label, u.base = u.DialAddress(), u.Origin(), normalAddress(u.BaseURL), u.Label(), u.baseURL()
}

// Provider is the name of the provider the upstream belongs to.
func (u *Upstream) Provider() string { return u.provider }

// Address is the upstream's base URL in a normal form, kept in the records of the objects the
// upstream creates so that they stay bound to it (see Provider.Bound): scheme and host in lower
// case, without a default port, user information, query or trailing slash.
func (u *Upstream) Address() string {
	if u.address != "" {
		return u.address
	}
	return normalAddress(u.BaseURL)
}

// normalAddress writes a base URL in the form Address describes; it is empty for nil. The
// spellings of one base URL get one address: the host without a trailing dot or an empty port,
// the path decoded and cleaned (no empty or dot segments, no trailing slash).
func normalAddress(base *url.URL) string {
	if base == nil {
		return ""
	}
	scheme := strings.ToLower(base.Scheme)
	host := strings.TrimRight(strings.ToLower(base.Hostname()), ".")
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	if port := base.Port(); port != "" && !(scheme == "https" && port == "443" || scheme == "http" && port == "80") {
		host += ":" + port
	}
	p := ""
	if base.Path != "" {
		p = strings.TrimRight(path.Clean("/"+base.Path), "/")
	}
	return scheme + "://" + host + (&url.URL{Path: p}).EscapedPath()
}

// Endpoint returns the upstream URL for a path relative to its base, e.g. "contents/generations/tasks".
func (u *Upstream) Endpoint(rel string) string {
	base := u.base
	if base == "" {
		base = u.baseURL()
	}
	return base + "/" + strings.TrimPrefix(rel, "/")
}

// baseURL is BaseURL as a string without its trailing slash.
func (u *Upstream) baseURL() string { return strings.TrimSuffix(u.BaseURL.String(), "/") }

// SetCredentials replaces any credential on an outgoing request with the upstream's own.
func (u *Upstream) SetCredentials(h http.Header) {
	if u.jwt != nil {
		clearCredentials(h)
		h.Set("Authorization", "Bearer "+u.jwt.current())
		return
	}
	if u.credValue == nil {
		setCredentials(h, u.APIKey, u.AuthStyle)
		return
	}
	clearCredentials(h)
	h[u.credName] = []string{u.credValue[0]}
}

// SetOwnCredentials is SetCredentials without a copy of the value, and without a clearing: on a
// header of the gateway's own making that holds no caller's header (a provider call's: its
// Content-Type and Accept), or on a copy of a caller's header that ClearCredentials cleared (the
// mediagw transport's attempt). The value set is shared with every other request to u, so h must
// be a header map that only an http.Transport reads (which never changes a value in place).
func (u *Upstream) SetOwnCredentials(h http.Header) {
	if u.credValue == nil || u.jwt != nil {
		u.SetCredentials(h)
		return
	}
	h[u.credName] = u.credValue
}

// ClearCredentials removes every credential and every header that picks the operator's provider
// organisation or project.
func ClearCredentials(h http.Header) { clearCredentials(h) }

// Label names the upstream in logs: provider/upstream.
func (u *Upstream) Label() string {
	if u.label != "" {
		return u.label
	}
	return u.provider + "/" + u.Name
}

// DialAddress is the upstream's host:port, with the scheme's default port when none is given.
func (u *Upstream) DialAddress() string {
	if u.dial != "" {
		return u.dial
	}
	if u.BaseURL.Port() != "" {
		return u.BaseURL.Host
	}
	port := "80"
	if u.BaseURL.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.BaseURL.Hostname(), port)
}

// Origin is the upstream's scheme://host, which names it in placeholders and the admin API.
func (u *Upstream) Origin() string {
	if u.origin != "" {
		return u.origin
	}
	return u.BaseURL.Scheme + "://" + u.BaseURL.Host
}

// Failed records a failure (connection failure, 5xx, 429) of a request of account at the
// upstream: the account backs off, and the upstream cools down for all when several accounts
// failed there (see Health); retryAfter, when positive, is the upstream's own Retry-After.
func (u *Upstream) Failed(account, reason string, retryAfter time.Duration) {
	u.health.failed(u, account, reason, retryAfter)
}

// Succeeded records an answer to account that was not a failure; it ends the run of failures.
func (u *Upstream) Succeeded(account string) { u.health.succeeded(u, account) }

// CoolingUntil is when the upstream may serve account again; zero or past when it may now.
func (u *Upstream) CoolingUntil(account string) time.Time { return u.health.coolingUntil(u, account) }

// healthKey identifies the upstream's health record, which outlives config reloads as long as
// the provider, the name and the address stay the same.
func (u *Upstream) healthKey() string {
	if u.key == "" {
		u.key = u.provider + "/" + u.Name + " " + u.BaseURL.String()
	}
	return u.key
}

// setCredentials removes the caller's credentials and sets key in the given auth style.
func setCredentials(h http.Header, key, style string) {
	clearCredentials(h)
	if key == "" {
		return
	}
	switch style {
	case AuthXAPIKey:
		h.Set("X-Api-Key", key)
	case AuthGoogAPIKey:
		h.Set("X-Goog-Api-Key", key)
	default:
		h.Set("Authorization", "Bearer "+key)
	}
}

// clearCredentials removes the caller's credentials, the headers that choose what the
// operator's account bills, those that make a server run another method or path than the
// request's, those that claim a client address, and the client's cookies (clearedHeader).
//
// It reads each of h's names once, rather than deleting every cleared name in turn: a request
// carries a handful of headers, far fewer than the names cleared, and this runs on every proxied
// request, by mediagw_route and again by the transport for each attempt.
func clearCredentials(h http.Header) {
	for name := range h {
		if clearedHeader(name) {
			delete(h, name) // deleting the entry just read is safe while ranging over h
		}
	}
}

// clearedHeader reports whether clearCredentials removes the header name. The names are in
// canonical form (http.CanonicalHeaderKey), as net/http and http.Header's methods key them; a
// name keyed otherwise (set into the map directly) is another header to this check, as it was
// to delete(h, name).
func clearedHeader(name string) bool {
	switch name {
	case "Authorization", "X-Api-Key", "X-Goog-Api-Key":
		return true
	// Headers that choose which of the operator's provider organisations or projects is used
	// (and billed) are the operator's to set, never a tenant's.
	case "Openai-Organization", "Openai-Project", "X-Goog-User-Project":
		return true
	// Only the capability endpoints are forwarded, by method and path. Google's APIs (and many
	// frameworks) run the method these name instead of the request's; some frameworks route by
	// the path in X-Original-URL or X-Rewrite-URL.
	case "X-Http-Method-Override", "X-Http-Method", "X-Method-Override", "X-Original-Url", "X-Rewrite-Url":
		return true
	// The client's address is the one reverse_proxy reports (X-Forwarded-For, from trusted
	// proxies only); these would let a tenant claim any address to an upstream that trusts them.
	case "Forwarded", "X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Cf-Connecting-Ip":
		return true
	// A browser calling the gateway from its own site sends that site's cookies (a console
	// session, say); no provider API takes cookies, and they are not the provider's to see.
	case "Cookie":
		return true
	}
	return false
}
