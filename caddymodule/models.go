package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/models"
)

func init() {
	caddy.RegisterModule(ModelsHandler{})
}

// ModelsHandler answers GET /v1/models with the configured models that the caller's key may use,
// sorted by id, in the OpenAI list shape, and GET /v1/models/{id} (the OpenAI SDKs' models
// retrieve) with one of them; a model the key may not use is answered 404 model_not_found, as
// an unknown one. It needs no path matcher: it answers every request on /v1/models or a path
// below it (/v1/models/…), spelled exactly so (405 for a method but GET or HEAD, 404 not_found
// for a path with an empty segment), except a POST to a model's method,
// /v1/models/{model}:generateContent and the rest of the generate-content protocol, and passes
// that and every other request to the next handler (mediagw_route). The item of a model with a
// price carries its `pricing`. It must follow mediagw_auth.
type ModelsHandler struct {
	list *models.Handler
}

// CaddyModule returns the Caddy module information.
func (ModelsHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_models",
		New: func() caddy.Module { return new(ModelsHandler) },
	}
}

// Provision finds the mediagw app.
func (h *ModelsHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.list = &models.Handler{Catalog: app.Catalog(), Prices: app.PriceTable(), Created: app.loadedAt.Unix()}
	return nil
}

func (h *ModelsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !models.Owns(r) {
		return next.ServeHTTP(w, r)
	}
	h.list.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ModelsHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*ModelsHandler)(nil)
)
