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
// follow mediagw_auth. It needs no path matcher: it answers the path /v1/upload/presign, spelled
// exactly so (405 for a method but POST), and passes every other request to the next handler.
// The object key is generated (prefix, an opaque per-account segment, the date, random bytes and
// the file's extension); the signed Content-Type must be sent unchanged. Calls are rate-limited
// per API key. Presigned URLs are never logged.
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

func (h *PresignHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.URL.Path != presign.Path {
		return next.ServeHTTP(w, r)
	}
	h.presign.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*PresignHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*PresignHandler)(nil)
)
