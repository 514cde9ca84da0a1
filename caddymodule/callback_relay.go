package caddymodule

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/videotask"
)

func init() {
	caddy.RegisterModule(CallbackRelayHandler{})
}

// CallbackRelayHandler receives upstream task callbacks at /mediagw/callbacks/<token> when the
// mediagw app's callbacks have a relay_base. It needs no API key (the per-task token is
// unguessable) and must come before mediagw_auth. An upstream callback is only a hint: the task
// is re-read from the upstream before its status, the client's callback or any limit changes.
//
// The token is a secret between the gateway and the upstream: the request's access log entry
// names the path with the token replaced by REDACTED (the handler writes that entry itself, as
// mediagw_auth does for keys in the query).
type CallbackRelayHandler struct {
	tasks *videotask.Handler
	log   credentialSafeLog
}

// CaddyModule returns the Caddy module information.
func (CallbackRelayHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_callback_relay",
		New: func() caddy.Module { return new(CallbackRelayHandler) },
	}
}

// Provision finds the mediagw app.
func (h *CallbackRelayHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.tasks = app.runtime.tasks
	h.log = newCredentialSafeLog(ctx)
	return nil
}

func (h *CallbackRelayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	token := videotask.RelayToken(r.URL.Path)
	if token == "" {
		h.tasks.ServeRelay(w, r, "")
		return nil
	}
	redactRelayToken(r, token)
	return h.log.serve(w, r, func(w http.ResponseWriter, r *http.Request) error {
		h.tasks.ServeRelay(w, r, token)
		return nil
	})
}

// redactRelayToken replaces the token in r's path and request URI (what the access log prints)
// with REDACTED.
func redactRelayToken(r *http.Request, token string) {
	r.URL.Path = strings.Replace(r.URL.Path, videotask.RelayPath+token, videotask.RelayPath+"REDACTED", 1)
	r.URL.RawPath = ""
	r.RequestURI = r.URL.RequestURI()
}

// Interface guards
var (
	_ caddy.Provisioner           = (*CallbackRelayHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*CallbackRelayHandler)(nil)
)
