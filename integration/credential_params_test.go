package integration

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCredentialLikeQueryParametersAreStripped sends credential-like query parameters in many
// spellings (api_key and its escapes, key in another case, escaped, or with an array suffix):
// none reaches the provider, and the other parameters do, in order.
func TestCredentialLikeQueryParametersAreStripped(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c-1","object":"chat.completion","choices":[]}`))
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, fetchedURLsCaddyfile, map[string]string{"upstream_url": provider.URL})
	for _, q := range []string{
		"api_key=sk-one", "api%5Fkey=sk-two", "API-KEY=sk-three", "apikey=sk-four", "KEY=sk-five",
		"%6Bey=sk-six", "key%5B%5D=sk-seven", "key%00=sk-eight", "access_token=sk-nine", "x-goog-api-key=sk-ten",
	} {
		r := call(t, http.MethodPost, base+"/v1/chat/completions?alt=sse&"+q+"&b=2", "mg-fetch", `{"model":"chat-1","messages":[]}`)
		if r.status != http.StatusOK {
			t.Fatalf("?%s = %d %s", q, r.status, r.body)
		}
		mu.Lock()
		got := queries[len(queries)-1]
		mu.Unlock()
		if got != "alt=sse&b=2" || strings.Contains(got, "sk-") {
			t.Errorf("?alt=sse&%s&b=2 reached the provider as ?%s, want ?alt=sse&b=2", q, got)
		}
	}
}
