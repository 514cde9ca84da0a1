package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestProviderCookiesStayWithTheGateway: a provider's Set-Cookie (load balancer affinity, bot
// checks, or one that names the console's session cookie: cookies ignore ports) never reaches a
// pass-through client, on a success or an error answer; the answer itself does.
func TestProviderCookiesStayWithTheGateway(t *testing.T) {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "__cf_bm=provider-session; Path=/; HttpOnly")
		w.Header().Add("Set-Cookie", "mediagw_console=planted; Path=/")
		w.Header().Add("Set-Cookie", "__Host-mediagw_console=planted; Path=/; Secure")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/embeddings" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad input","type":"invalid_request_error"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, fetchedURLsCaddyfile, map[string]string{"upstream_url": provider.URL})
	for path, want := range map[string]int{"/v1/chat/completions": 200, "/v1/embeddings": 400} {
		model := map[string]string{"/v1/chat/completions": "chat-1", "/v1/embeddings": "embed-1"}[path]
		r := call(t, http.MethodPost, base+path, "mg-fetch", `{"model":"`+model+`","messages":[],"input":"hi"}`)
		if r.status != want || len(r.header.Values("Set-Cookie")) != 0 {
			t.Errorf("%s = %d with Set-Cookie %q, want %d and no cookie", path, r.status, r.header.Values("Set-Cookie"), want)
		}
	}
}
