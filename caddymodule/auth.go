package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/reqstate"
)

func init() {
	caddy.RegisterModule(AuthHandler{})
}

// AuthHandler authenticates every request with a mediagw API key, taken from where each
// protocol's official SDK sends it: "Authorization: Bearer <key>" on every endpoint; also
// X-Api-Key on /v1/messages (the messages protocol); also X-Goog-Api-Key or ?key= on the
// generate-content protocol's paths, /v1beta/… and /v1/models/{model}:{method} (where the Google
// Gen AI SDK sends it from its version 3 on). Two places carrying different keys are answered 401.
//
// A missing, malformed or unknown key is answered 401; a disabled or expired key, a disabled
// account, or a client address outside the key's allow_ips is answered 403. Errors on the video
// task API (/api/v3/…) use the task error shape, those of the messages and generate-content
// protocols Anthropic's and Google's, all others the OpenAI shape (apierror.ShapeFor).
//
// A key with a rate limit (rate) gets 429 with Retry-After past it; every admitted request is
// counted in the key's and the account's usage.
//
// On success the key id (never the secret) is set as {http.auth.user.id}, so access logs carry
// it, and the account as {mediagw.account}.
//
// Every credential header (Authorization, Proxy-Authorization, X-Api-Key, X-Goog-Api-Key,
// Api-Key, X-Auth-Token, X-Amz-Security-Token) and the key query parameter are removed from every
// request before anything else sees it, whether the key is valid or not: no later handler,
// placeholder, log entry or upstream gets them. So is every other header or query pair that holds
// the caller's key (auth.StripKeyCopies): a client may send it again under a name of its own. Request trailers are dropped too: they arrive
// after the body, past every check, and reverse_proxy would forward them, a key among them. Caddy's own access and error logs print a copy of
// the request taken before any handler runs; for a request whose credentials that copy would
// show, this handler writes those log entries itself from the request without them (see
// auth_log.go).
type AuthHandler struct {
	authn      *auth.Authenticator
	accountant *accounting.Accountant
	observer   *observer
	logger     *zap.Logger
	log        credentialSafeLog
}

// CaddyModule returns the Caddy module information.
func (AuthHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_auth",
		New: func() caddy.Module { return new(AuthHandler) },
	}
}

// Provision finds the mediagw app.
func (h *AuthHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.authn, h.accountant, h.observer, h.logger = app.Authenticator(), app.Accountant(), app.observer, ctx.Logger()
	h.log = newCredentialSafeLog(ctx)
	return nil
}

func (h *AuthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) (err error) {
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	ow := h.observer.begin(w, r, srv)
	defer func() { h.observer.end(ow, err) }()
	w = ow
	secret, err := auth.KeyFromRequest(r)
	var caller *auth.Caller // shared: never changed (see auth.Authenticator.AuthenticateShared)
	if err == nil {
		caller, err = h.authn.AuthenticateShared(r.Context(), secret, clientIP(r))
	}
	// Caddy's copy of r still shows what was stripped: the credentials, and any other copy of
	// the caller's key (another header, another query parameter, the path).
	copied := keyToStrip(secret, err)
	exposed := exposes(auth.Strip(r)|auth.StripKeyCopies(r, copied), srv)
	stripOriginalURL(r, copied)
	if exposed {
		return h.log.serve(w, r, func(w http.ResponseWriter, r *http.Request) error {
			return h.authenticate(w, r, caller, err, next, ow)
		})
	}
	return h.authenticate(w, r, caller, err, next, ow)
}

// minStrippedGuess is the shortest bearer that did not authenticate whose copies are still
// stripped: a key the gateway no longer takes (revoked, expired) is still a secret, but a short
// guess ("Bearer 8") would match, and so erase from the request and its log entry, unrelated
// headers and query pairs.
const minStrippedGuess = 16

// keyToStrip is the key whose copies StripKeyCopies removes: the caller's, when it
// authenticated (err nil) or is long enough to be a key (minStrippedGuess); else none.
func keyToStrip(secret string, err error) string {
	if err == nil || len(secret) >= minStrippedGuess {
		return secret
	}
	return ""
}

// authenticate answers 401/403/429 or runs next with the caller's identity (caller and err are
// what authenticating its key gave).
func (h *AuthHandler) authenticate(w http.ResponseWriter, r *http.Request, caller *auth.Caller, err error, next caddyhttp.Handler, ow *observedWriter) error {
	var id *auth.Identity
	if err == nil {
		id = &caller.Identity
	}
	if err == nil && len(id.AllowIPs) > 0 && !forwardedAllowed(r, *id) {
		err = auth.ErrIPNotAllowed
	}
	if err == nil {
		err = h.accountant.Admit(r.Context(), *id)
	}
	if err != nil {
		var refusal *apierror.Error
		if errors.As(err, &refusal) && refusal.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mediagw"`)
		}
		apierror.Respond(w, apierror.ShapeFor(r), h.logger, err)
		return nil
	}
	ow.identity = id
	// Set, not a Map function: the replacer answers its set values before any function, so a
	// function would lose to a value an earlier handler set for either name (vars, basic_auth,
	// or a map handler's own function, from a client's header); Set replaces it.
	repl := replacer(r)
	ow.repl = repl // for mediagw_route (requestReplacer): one lookup of the context chain a request
	repl.Set("http.auth.user.id", caller.KeyIDValue)
	repl.Set("mediagw.account", caller.AccountValue)
	ow.entry.Authenticated(id.Account, id.KeyID)
	if ow.extra != nil {
		ow.extra.Add(zap.String("account", id.Account))
	}
	// One context value for the request's state, which mediagw_route completes with the
	// dispatch (see reqstate.State): one copy of the request, one link more in its context, kept
	// in the observed writer (reqstate.Context).
	ow.ctx = reqstate.Context{Context: r.Context(), State: reqstate.State{Identity: ow.identity, Entry: &ow.entry, Request: true}}
	return next.ServeHTTP(w, r.WithContext(&ow.ctx))
}

// accessLogFields returns the extra fields of the access log entry of r, served by srv, or nil
// when the server writes no access log: then the fields would be built for nothing.
func accessLogFields(r *http.Request, srv *caddyhttp.Server) *caddyhttp.ExtraLogFields {
	if srv == nil || srv.Logs == nil {
		return nil
	}
	extra, _ := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields)
	return extra
}

// stripOriginalURL removes the credential query parameters, and every pair that holds a copy
// of key (the caller's), from the copy of the request URL that Caddy keeps for
// {http.request.orig_uri.*} placeholders. (Caddy keeps that copy by value; only its URL can be
// changed in place.)
func stripOriginalURL(r *http.Request, key string) {
	orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request)
	if !ok || orig.URL == nil || orig.URL.RawQuery == "" && !auth.PathHoldsKey(orig.URL, key) {
		return
	}
	probe := &http.Request{URL: orig.URL, Header: http.Header{}}
	auth.StripCredentials(probe)
	auth.StripKeyCopies(probe, key)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*AuthHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*AuthHandler)(nil)
)
