package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// readmePassThroughSite is the site of the README's pass-through form: one reverse_proxy with
// the mediagw upstream source and transport, retrying on the next upstream.
const readmePassThroughSite = `
http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
			lb_retries 2
		}
	}
}
`

// fetchedURLsCaddyfile is the README's pass-through form with models of every kind of body.
const fetchedURLsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   chat-1 embed-1 rerank-1 image-1 video-1 tts-1
		}
		key mg-fetch {
			account acme
		}
	}
}
` + readmePassThroughSite

// TestFetchableStringsArePublicURLs sends bodies that hide an internal address where a provider
// may fetch it: schemeless host strings, a key that differs from prompt only by case, and
// members of chat, embeddings and rerank bodies that the gateway did not name (image,
// fallback_url, input_audio.url). Each is refused with 400 and never reaches the provider; free
// text that only mentions an address, and public URLs, still go through.
func TestFetchableStringsArePublicURLs(t *testing.T) {
	var forwarded atomic.Int64
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := forwarded.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x-%d","object":"ok","created":1,"data":[]}`, n)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, fetchedURLsCaddyfile, map[string]string{"upstream_url": provider.URL})

	refused := []struct{ path, body string }{
		{"/v1/images/generations", `{"model":"image-1","prompt":"a cat","image":"127.0.0.1/x.png"}`},
		{"/v1/images/generations", `{"model":"image-1","prompt":"a cat","image":"localhost:8080/x.png"}`},
		{"/v1/images/generations", `{"model":"image-1","prompt":"a cat","mask":"10.0.0.7:80"}`},
		{"/v1/video/generations", `{"model":"video-1","prompt":"a cat","first_frame_image":"[::1]/a.png"}`},
		{"/v1/images/generations", `{"model":"image-1","Prompt":"http://127.0.0.1/x.png"}`},
		{"/v1/video/generations", `{"model":"video-1","prompt":"a cat","extra":{"PROMPT":"http://169.254.169.254/latest"}}`},
		{"/v1/embeddings", `{"model":"embed-1","input":[{"image":"http://127.0.0.1/x.png"}]}`},
		{"/v1/embeddings", `{"model":"embed-1","input":[{"image":"localhost:8080/x.png"}]}`},
		{"/v1/rerank", `{"model":"rerank-1","query":"q","documents":[{"image":"http://169.254.169.254/latest"}]}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"url":"http://127.0.0.1:9000/a.wav","format":"wav"}}]}]}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"},"fallback_url":"http://192.168.1.1/a.png"}]}]}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":[{"type":"image","image":"http://127.0.0.1/a.png"}]}]}`},
		{"/v1/audio/speech", `{"model":"tts-1","input":"hello","voice":{"reference_audio":"http://10.1.2.3/voice.wav"}}`},
	}
	for _, tc := range refused {
		before := forwarded.Load()
		r := call(t, http.MethodPost, base+tc.path, "mg-fetch", tc.body)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"invalid_request_body"`) || forwarded.Load() != before {
			t.Errorf("%s %s = %d %s (forwarded: %v), want 400 invalid_request_body", tc.path, tc.body, r.status, r.body, forwarded.Load() != before)
		}
	}
	accepted := []struct{ path, body string }{
		{"/v1/images/generations", `{"model":"image-1","prompt":"http://127.0.0.1/x.png","size":"1024x1024","image":"https://example.com/x.png"}`},
		{"/v1/video/generations", `{"model":"video-1","prompt":"a cat","ratio":"16:9","resolution":"720p","version":"v1.2"}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":"what runs on localhost:8080/admin and http://127.0.0.1/?"},{"role":"user","content":[{"type":"text","text":"http://10.0.0.1/"}]}]}`},
		{"/v1/embeddings", `{"model":"embed-1","input":["http://localhost/x","127.0.0.1/x.png"]}`},
		{"/v1/rerank", `{"model":"rerank-1","query":"localhost:8080/x.png","documents":["http://127.0.0.1/"]}`},
		{"/v1/embeddings", `{"model":"embed-1","input":[{"image":"https://example.com/x.png"}]}`},
	}
	for _, tc := range accepted {
		if r := call(t, http.MethodPost, base+tc.path, "mg-fetch", tc.body); r.status != http.StatusOK {
			t.Errorf("%s %s = %d %s, want it forwarded", tc.path, tc.body, r.status, r.body)
		}
	}
}

// TestNotFetchedMembersAreForwarded: a legitimate request is not refused because a member that
// no provider fetches holds text that looks like a host (a user id, chat metadata, a tool's JSON
// schema pattern, tool-call arguments, stop sequences): each reaches the provider as sent. The
// same text where a provider may fetch it is still refused.
func TestNotFetchedMembersAreForwarded(t *testing.T) {
	var got atomic.Value
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"ok","created":1,"data":[]}`)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, fetchedURLsCaddyfile, map[string]string{"upstream_url": provider.URL})

	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":"hi"}],"user":"team.acme.io/alice","metadata":{"page":"docs.example.com/guide"},"stop":["localhost:3000/"]}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"open","parameters":{"type":"object","properties":{"u":{"type":"string","pattern":"example.com/.*"}}}}}]}`},
		{"/v1/chat/completions", `{"model":"chat-1","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"open","arguments":"{\"u\":\"127.0.0.1:8080/x\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`},
		{"/v1/embeddings", `{"model":"embed-1","input":"hello","user":"ops.example.org/bot"}`},
	} {
		if r := call(t, http.MethodPost, base+tc.path, "mg-fetch", tc.body); r.status != http.StatusOK || got.Load() != tc.body {
			t.Errorf("%s %s = %d %s (upstream got %v), want it forwarded as sent", tc.path, tc.body, r.status, r.body, got.Load())
		}
	}
	r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-fetch",
		`{"model":"chat-1","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"mcp","server_url":"http://10.0.0.1:8080/mcp"}]}`)
	if r.status != http.StatusBadRequest {
		t.Errorf("an MCP tool's internal server_url = %d %s, want 400", r.status, r.body)
	}
}
