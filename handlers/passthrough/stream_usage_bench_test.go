package passthrough

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkStreamWithUsage is what a streamed chat completion's body costs to ask for its usage
// (askUsage, then streamWithUsage as dispatch calls it): an SDK's body without stream_options
// (added), one that asks for the usage itself (sent as it is), and a conversation of 20 turns.
//
//	go test ./handlers/passthrough/ -run '^$' -bench StreamWithUsage -benchmem -cpu 1
func BenchmarkStreamWithUsage(b *testing.B) {
	turn := `{"role":"user","content":"a question of a usual length, with \"quotes\" and a number 12.5e3"},{"role":"assistant","content":"an answer of a usual length, a sentence or two"}`
	for _, c := range []struct{ name, body string }{
		{"added", `{"model":"bench-chat","stream":true,"messages":[{"role":"user","content":"hello"}]}`},
		{"asked", `{"model":"bench-chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`},
		{"20 turns", `{"model":"bench-chat","stream":true,"temperature":0.7,"max_tokens":512,"messages":[` + strings.Repeat(turn+",", 9) + turn + `]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			var fields bodyFields
			if err := fields.read(body, modelAndPriced); err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			replay := &replayedBody{body: body} // the body as jsonFields leaves it
			ep := Endpoint{Path: "/v1/chat/completions"}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r.Body = replay
				options, err := askUsage(ep, &fields, true)
				if err != nil {
					b.Fatal(err)
				}
				if err := streamWithUsage(r, options); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
