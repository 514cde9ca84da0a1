package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/presign"
)

func init() {
	caddy.RegisterModule(PresignHandler{})
}

// PresignHandler answers POST /v1/upload/presign with a presigned PUT URL to the bucket in the
// mediagw app's `upload` settings, so the client uploads the file directly to storage. It must
// follow mediagw_auth. The object key is generated (prefix, an opaque per-account segment, the
// date, random bytes and the file's extension); the signed Content-Type must be sent unchanged.
// Calls are rate-limited per API key. Presigned URLs are never logged.
type PresignHandler struct {
	presign *presign.Handler
}

// CaddyModule returns the Caddy module information.
func (PresignHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_presign",
		New: func() caddy.Module { return new(PresignHandler) },
	}
}

// Provision finds the mediagw app's upload settings.
func (h *PresignHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	handler := app.uploads.handler // a copy per handler; the rate windows are in the store
	handler.Logger = ctx.Logger()
	h.presign = &handler
	return nil
}

func (h *PresignHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.presign.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*PresignHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*PresignHandler)(nil)
)
