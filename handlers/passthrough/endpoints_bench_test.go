package passthrough

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// BenchmarkEndpoint is the router's look-up of a request's endpoint among Capabilities: a chat
// completion (bench/run.sh's pass-through), an embeddings call further down the list, and a
// Gemini call with a model parameter. Run it with
//
//	go test ./handlers/passthrough/ -run '^$' -bench Endpoint -benchmem -cpu 1
func BenchmarkEndpoint(b *testing.B) {
	rt := &Router{}
	for _, path := range []string{"/v1/chat/completions", "/v1/embeddings", "/v1beta/models/gemini-pro:generateContent"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := rt.endpoint(http.MethodPost, path); !ok {
					b.Fatal("no endpoint for", path)
				}
			}
		})
	}
}

// BenchmarkRouteChat is the router's whole work on bench/run.sh's pass-through request (a chat
// completion of 70 bytes): the endpoint, the body read and checked (keys, fetched URLs,
// references), the provider and its upstream chosen, the request rewritten. Run it with
//
//	go test ./handlers/passthrough/ -run '^$' -bench RouteChat -benchmem -cpu 1
func BenchmarkRouteChat(b *testing.B) {
	rt := &Router{Catalog: catalog(b)}
	id := auth.Identity{Account: "bench", KeyID: "k"}
	body := []byte(`{"model":"doubao","messages":[{"role":"user","content":"hello"}]}`)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(w, r, id)
		if err != nil {
			b.Fatal(err)
		}
		route.Done()
	}
}
