// Package models serves GET /v1/models: the configured models that the caller's key may use.
package models

import (
	"encoding/json"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

// Handler lists the models of a catalog, filtered by the caller's key.
type Handler struct {
	Catalog *providers.Catalog
	// Created is the "created" time reported for every model (Unix seconds).
	Created int64
}

// Model is one item of the list, in the OpenAI shape.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// List is the response body.
type List struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

var errMethod = apierror.New(http.StatusMethodNotAllowed, "method_not_allowed", "use GET to list models")

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		apierror.Write(w, apierror.OpenAIShape, errMethod)
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
		list.Data = append(list.Data, Model{ID: m, Object: "model", Created: h.Created, OwnedBy: p.Name})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}
