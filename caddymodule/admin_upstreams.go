package caddymodule

import (
	"encoding/json"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/providers"
)

// upstreamsPath is the admin route that shows every provider's upstreams and their health.
const upstreamsPath = "/mediagw/upstreams"

// UpstreamsView is the answer of GET /mediagw/upstreams.
type UpstreamsView struct {
	Upstreams []providers.UpstreamState `json:"upstreams"`
}

// serveUpstreams answers GET /mediagw/upstreams: each upstream in configuration order, healthy
// or cooling down until when, with its run of failures and the last few failures. Credentials
// are never shown.
func serveUpstreams(w http.ResponseWriter, r *http.Request, catalog *providers.Catalog) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Message: "use GET"}
	}
	view := UpstreamsView{Upstreams: []providers.UpstreamState{}}
	for _, p := range catalog.Providers() {
		for _, u := range p.Upstreams {
			view.Upstreams = append(view.Upstreams, catalog.Health().State(u))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(view)
}
