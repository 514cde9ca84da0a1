// Package models serves GET /v1/models, the configured models that the caller's key may use, and
// GET /v1/models/{id}, one of them.
package models

import (
	"net/http"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/urlpath"
)

// Handler lists the models of a catalog, filtered by the caller's key.
type Handler struct {
	Catalog *providers.Catalog
	// Prices gives each priced model's item its pricing; nil: no item has one.
	Prices *billing.Table
	// Created is the "created" time reported for every model (Unix seconds).
	Created int64
}

// Model is one item of the list, in the OpenAI shape.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Pricing is the model's price, for models that have one (an addition to the OpenAI item).
	Pricing *billing.Pricing `json:"pricing,omitempty"`
}

// List is the response body.
type List struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Path is the list's path; /v1/models/{id} is one model of it.
const Path = "/v1/models"

// Owns reports whether the handler answers r: a request on /v1/models or a path below it
// (/v1/models/…), spelled exactly so (not /v1/modelsX, /V1/MODELS or //v1/models). It does not
// answer a call of a model's method (a POST to /v1/models/{model}:generateContent and the rest of
// the generate-content protocol, sent there by the Google Gen AI SDK from its version 3 on): that
// request is for the handler after it. Every other request of its own is answered, 405 unless GET
// or HEAD, and 404 not_found for a path with an empty segment (/v1/models/).
func Owns(r *http.Request) bool {
	if !urlpath.Under(r.URL.Path, Path) {
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	_, model, isItem := strings.Cut(r.URL.Path, "/models/")
	return !isItem || !strings.Contains(model, ":")
}

// errNoEndpoint answers a path under /v1/models that names no model.
var errNoEndpoint = apierror.New(http.StatusNotFound, "not_found", "no such endpoint")

// ServeHTTP answers the list, or with a path that goes on after /models/ (/v1/models/{id}, the
// OpenAI protocol's model retrieve), the one model named by the rest of the path; a path with an
// empty segment (/v1/models/, /v1/models/{id}/, /v1/models//{id}) is a 404 not_found, no
// endpoint. A model that
// the key may not use is answered 404 model_not_found, exactly as one that does not exist, so
// that a key cannot learn what else the gateway serves.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		apierror.Write(w, apierror.OpenAIShape, apierror.MethodNotAllowed(w, http.MethodGet, http.MethodHead))
		return
	}
	id, ok := auth.FromContext(r.Context())
	if !ok {
		apierror.Write(w, apierror.OpenAIShape, auth.ErrMissingKey)
		return
	}
	if _, model, isItem := strings.Cut(r.URL.Path, "/models/"); isItem {
		if model == "" || strings.HasPrefix(model, "/") || strings.HasSuffix(model, "/") || strings.Contains(model, "//") {
			// An empty segment (/v1/models/, /v1/models/{id}/, a doubled slash) is no
			// endpoint (no SDK sends it), as a pass-through path with one is not: neither the
			// list nor a model. A model id may hold a single slash (org/model).
			apierror.Write(w, apierror.OpenAIShape, errNoEndpoint)
			return
		}
		h.retrieve(w, id, model)
		return
	}
	list := List{Object: "list", Data: []Model{}}
	for _, m := range h.Catalog.Models() {
		if id.AllowsModel(m) {
			list.Data = append(list.Data, h.item(m))
		}
	}
	// The status is sent; a failed write means the client is gone.
	_ = apierror.WriteJSON(w, http.StatusOK, list)
}

// retrieve answers one model of the list.
func (h *Handler) retrieve(w http.ResponseWriter, id auth.Identity, model string) {
	if !id.AllowsModel(model) || !slices.Contains(h.Catalog.Models(), model) {
		apierror.Write(w, apierror.OpenAIShape, apierror.New(http.StatusNotFound, "model_not_found",
			"the model "+apierror.Echo(model)+" does not exist or this API key may not use it").WithParam("model"))
		return
	}
	// The status is sent; a failed write means the client is gone.
	_ = apierror.WriteJSON(w, http.StatusOK, h.item(model))
}

// item is the list item of a served model.
func (h *Handler) item(model string) Model {
	owner := ""
	if p, ok := h.Catalog.ProviderFor(model); ok {
		owner = p.Name
	}
	item := Model{ID: model, Object: "model", Created: h.Created, OwnedBy: owner}
	if price, ok := h.Prices.Price(model); ok {
		pricing := price.Pricing(h.Prices.Currency())
		item.Pricing = &pricing
	}
	return item
}
