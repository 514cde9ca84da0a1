package caddymodule

import (
	"net/http"

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
type CallbackRelayHandler struct {
	tasks *videotask.Handler
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
	return nil
}

func (h *CallbackRelayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.tasks.ServeRelay(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*CallbackRelayHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*CallbackRelayHandler)(nil)
)
