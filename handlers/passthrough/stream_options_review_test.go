package passthrough

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// TestPathModelCompletionAsksForUsage: docs/billing.md says an added endpoint whose path ends in
// /completions is sent with stream_options.include_usage when it streams. An Azure-shaped one
// names its model in the path (/openai/deployments/{model}/chat/completions): its streamed body
// must ask for the usage too, and the request must be known as a stream.
func TestPathModelCompletionAsksForUsage(t *testing.T) {
	extra, err := ParseEndpoint("POST", "/openai/deployments/{model}/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: catalog(t), Extra: []Endpoint{extra}}
	body := `{"messages":[{"role":"user","content":"hi"}],"stream":true}`
	r := httptest.NewRequest("POST", "/openai/deployments/doubao/chat/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer route.Done()
	got, _ := io.ReadAll(r.Body)
	if !route.Streams || !strings.Contains(string(got), `"stream_options":{"include_usage":true}`) {
		t.Fatalf("streamed chat on an added {model} path: Streams=%v, forwarded %s; want a stream asking for its usage", route.Streams, got)
	}
}

// TestPathModelCompletionRefusesAStreamThatIsNoBoolean: docs/billing.md says a stream that is not
// a boolean is refused with 400 on every JSON endpoint; an added completion endpoint with
// {model} in its path forwards it (a lax upstream streams it, unasked for its usage).
func TestPathModelCompletionRefusesAStreamThatIsNoBoolean(t *testing.T) {
	extra, err := ParseEndpoint("POST", "/openai/deployments/{model}/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: catalog(t), Extra: []Endpoint{extra}}
	r := httptest.NewRequest("POST", "/openai/deployments/doubao/chat/completions", strings.NewReader(`{"messages":[],"stream":"true"}`))
	r.Header.Set("Content-Type", "application/json")
	route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
	if err == nil {
		route.Done()
		t.Fatal(`"stream":"true" on an added {model} completion path was forwarded; want 400 (param stream)`)
	}
}
