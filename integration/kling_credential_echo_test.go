package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// klingEchoCaddyfile serves a Kling provider (a JWT made from its access and secret key) on the
// task API and on pass-through: mediagw_route routes any endpoint's body that names a model the
// provider lists.
const klingEchoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider kling {
			base_url {{echo_url}}/kling/v1
			access_key kling-access-key
			secret_key 7c1e4b2a9d0f4e6b8a3c5d7e9f1a2b3c
			protocol kling
			models kling-v2-1-master
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
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// klingSecretKey is the provider's secret key in klingEchoCaddyfile: no usual key prefix, so only
// the gateway's knowledge of it finds it in an answer.
const klingSecretKey = "7c1e4b2a9d0f4e6b8a3c5d7e9f1a2b3c"

// TestKlingAnswersNeverQuoteItsCredential: a Kling provider (which knows the secret key, as it
// checks the token's signature with it) that quotes the token it was sent, bare (no "Bearer"
// before it), or the secret key, in an error answer's message or in a header, reaches no client
// with either: not on the task API (a 400 passed on, a 500 quoted in the 502), not on
// pass-through (an error answer, and the headers of any answer). Before, the task API redacted
// only the token the call sent, and pass-through only an api_key, which a Kling provider has not.
func TestKlingAnswersNeverQuoteItsCredential(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	echo := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = append(sent, token)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Debug-Token", token)
		w.Header().Set("X-Debug-Secret", "secret="+klingSecretKey)
		status, quoted := http.StatusBadRequest, token
		switch {
		case bytes.Contains(body, []byte("status 500")):
			status = http.StatusInternalServerError
		case bytes.Contains(body, []byte("status 401")):
			status = http.StatusUnauthorized
		}
		if bytes.Contains(body, []byte("echo secret")) {
			quoted = klingSecretKey
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":1201,"message":"signature of %s checked","error":{"message":"signature of %s checked"}}`, quoted, quoted)
	}))
	base, _ := startSimGateway(t, klingEchoCaddyfile, map[string]string{"echo_url": echo.URL})

	// A 500 cools the upstream down for a second: it comes last.
	cases := []struct{ name, path, body string }{
		{"pass-through", "/v1/chat/completions", `{"model":"kling-v2-1-master","messages":[{"role":"user","content":%q}]}`},
		{"task API", "/api/v3/contents/generations/tasks", `{"model":"kling-v2-1-master","content":[{"type":"text","text":%q}]}`},
	}
	variants := map[string][]string{
		"pass-through": {"echo token", "echo secret", "echo token, status 401", "echo secret, status 401"},
		"task API":     {"echo token", "echo secret", "echo secret, status 401", "echo secret, status 500"},
	}
	for _, c := range cases {
		for _, variant := range variants[c.name] {
			r := call(t, http.MethodPost, base+c.path, "mg-alice", fmt.Sprintf(c.body, variant))
			if r.status < 400 || r.status == http.StatusServiceUnavailable {
				t.Errorf("%s, %s: %d %s, want the provider's refusal", c.name, variant, r.status, r.body)
			}
			mu.Lock()
			secrets := append([]string{klingSecretKey}, sent...)
			mu.Unlock()
			if quotesAny(string(r.body), secrets) {
				t.Errorf("%s, %s: the answer quotes the provider's credential: %d %.200s", c.name, variant, r.status, r.body)
			}
			for name, values := range r.header {
				if quotesAny(strings.Join(values, "\n"), secrets) {
					t.Errorf("%s, %s: header %s quotes the provider's credential: %.200s", c.name, variant, name, values)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 8 || !strings.HasPrefix(sent[0], "eyJ") || !strings.HasPrefix(sent[7], "eyJ") {
		t.Fatalf("the fake was sent %d calls (%q), want 8 with a Kling JWT", len(sent), sent)
	}
}

// quotesAny reports whether s holds one of secrets (the empty ones aside).
func quotesAny(s string, secrets []string) bool {
	for _, secret := range secrets {
		if secret != "" && strings.Contains(s, secret) {
			return true
		}
	}
	return false
}
