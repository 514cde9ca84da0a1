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
	"github.com/mediagw/mediagw/handlers/usage"
)

func init() {
	caddy.RegisterModule(AuthHandler{})
}

// AuthHandler authenticates every request with an mediagw API key sent as
// "Authorization: Bearer <key>".
//
// A missing, malformed or unknown key is answered 401; a disabled or expired key, a disabled
// account, or a client address outside the key's allow_ips is answered 403. Errors on the video
// task API (/api/v3/…) use the task error shape, all others the OpenAI shape.
//
// A key with a rate limit (rate) gets 429 with Retry-After past it; every admitted request is
// counted in the key's and the account's usage.
//
// On success the key id (never the secret) is set as {http.auth.user.id}, so access logs carry
// it, and the account as {mediagw.account}. The caller's Authorization, X-Api-Key and
// X-Goog-Api-Key headers are removed, so the caller's key never reaches an upstream.
type AuthHandler struct {
	authn      *auth.Authenticator
	accountant *accounting.Accountant
	observer   *observer
	logger     *zap.Logger
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
	return nil
}

func (h *AuthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) (err error) {
	ow, entry := h.observer.begin(w, r)
	defer func() { h.observer.end(ow, r, entry, err) }()
	w = ow
	id, err := h.authn.Authenticate(r.Context(), r.Header.Get("Authorization"), clientIP(r))
	if err == nil {
		err = h.accountant.Admit(r.Context(), id)
	}
	if err != nil {
		var refusal *apierror.Error
		if errors.As(err, &refusal) && refusal.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mediagw"`)
		}
		apierror.Respond(w, apierror.ShapeFor(r), h.logger, err)
		return nil
	}
	repl := replacer(r)
	repl.Set("http.auth.user.id", id.KeyID)
	repl.Set("mediagw.account", id.Account)
	entry.Authenticated(id.Account, id.KeyID)
	if extra, ok := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); ok {
		extra.Add(zap.String("account", id.Account))
	}
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		r.Header.Del(name)
	}
	return next.ServeHTTP(w, r.WithContext(auth.WithIdentity(usage.WithEntry(r.Context(), entry), id)))
}

// Interface guards
var (
	_ caddy.Provisioner           = (*AuthHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*AuthHandler)(nil)
)
