package passthrough

import (
	"net/http"
	"testing"
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
