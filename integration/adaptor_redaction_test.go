package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// echoCredentialCaddyfile puts a Kling provider (a JWT made from its access and secret key) and a
// MiniMax provider (a key without any of the usual prefixes) in front of one fake that refuses
// every create and quotes the credential it was sent, as some providers do.
const echoCredentialCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider kling {
			base_url {{echo_url}}/kling/v1
			access_key kling-access-key
			secret_key kling-secret-key
			protocol kling
			models kling-v2-1-master
		}
		provider hailuo {
			base_url {{echo_url}}/minimax/v1
			api_key eyJoperatorMiniMaxKey0123456789
			protocol minimax
			models MiniMax-Hailuo-02
		}
		key mg-alice {
			account alice
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestAdaptorRefusalsNeverQuoteTheCredential: a provider's refusal that quotes the credential the
// gateway sent (Kling's signed JWT, valid for half an hour; a MiniMax key with no known prefix)
// reaches the client with the credential redacted: the client gets the provider's code and
// message, never the operator's token.
func TestAdaptorRefusalsNeverQuoteTheCredential(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	echo := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		sent = append(sent, token)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/kling/") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"code":1201,"message":"parameter invalid for token %s","request_id":"r1"}`, token)
			return
		}
		fmt.Fprintf(w, `{"base_resp":{"status_code":2013,"status_msg":"invalid params (key %s)"}}`, token)
	}))
	base, _ := startSimGateway(t, echoCredentialCaddyfile, map[string]string{"echo_url": echo.URL})
	for _, model := range []string{"kling-v2-1-master", "MiniMax-Hailuo-02"} {
		r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-alice",
			fmt.Sprintf(`{"model":%q,"content":[{"type":"text","text":"a swing"}]}`, model))
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "[redacted]") {
			t.Errorf("%s refusal = %d %s, want 400 with the credential redacted", model, r.status, r.body)
		}
		mu.Lock()
		tokens := append([]string(nil), sent...)
		mu.Unlock()
		for _, token := range tokens {
			if token != "" && strings.Contains(string(r.body), token) {
				t.Errorf("%s refusal quotes the credential the gateway sent: %s", model, r.body)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || !strings.HasPrefix(sent[0], "eyJ") || sent[1] != "eyJoperatorMiniMaxKey0123456789" {
		t.Fatalf("the fake was sent %q, want a Kling JWT and the MiniMax key", sent)
	}
}
