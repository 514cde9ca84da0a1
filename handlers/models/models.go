// Package models serves GET /v1/models: the configured models that the caller's key may use.
package models

import (
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
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
	list := List{Object: "list", Data: []Model{}}
	for _, m := range h.Catalog.Models() {
		if !id.AllowsModel(m) {
			continue
		}
		p, _ := h.Catalog.ProviderFor(m)
		item := Model{ID: m, Object: "model", Created: h.Created, OwnedBy: p.Name}
		if price, ok := h.Prices.Price(m); ok {
			pricing := price.Pricing(h.Prices.Currency())
			item.Pricing = &pricing
		}
		list.Data = append(list.Data, item)
	}
	// The status is sent; a failed write means the client is gone.
	_ = apierror.WriteJSON(w, http.StatusOK, list)
}
