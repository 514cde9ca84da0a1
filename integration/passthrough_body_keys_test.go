package integration

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// bodyKeysCaddyfile routes two models to two providers on one recording upstream, told apart by
// their base paths, in Caddyfile.example's layout (no route block, the mediagw transport).
const bodyKeysCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider cheap {
			base_url {{rec_url}}/cheap/v1
			api_key rv-cheap-upstream-key
			models rv-cheap
		}
		provider dear {
			base_url {{rec_url}}/dear/v1
			api_key rv-dear-upstream-key
			models rv-dear
		}
		key mg-review-body-7e21 {
			account rvbody
		}
	}
}

` + transportSite

// TestPassThroughForwardsOnlyTheBodyItChecked sends pass-through bodies whose model (or another
// checked field) a decoder could read otherwise than the gateway: repeated, in another case,
// escaped, with a key whose case fold is ASCII (the Kelvin sign, the long s), past the sixteen
// keys read without a set, after the object, in a truncated body, nested, after a very long key,
// at the end of a large body. Each is refused 400 before any upstream sees it, or reaches the
// provider of the model checked as the very bytes sent.
func TestPassThroughForwardsOnlyTheBodyItChecked(t *testing.T) {
	rec := newRecorder(t)
	base, _ := startSimGateway(t, bodyKeysCaddyfile, map[string]string{"rec_url": rec.URL})
	fill := func(n int) string { // n distinct members before what follows
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `"x%d":%d,`, i, i)
		}
		return b.String()
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, path, body string
		provider         string // "" when refused
	}{
		{"plain", "/v1/chat/completions", `{"model":"rv-cheap",` + msgs + `}`, "cheap"},
		{"repeated model", "/v1/chat/completions", `{"model":"rv-cheap","model":"rv-dear",` + msgs + `}`, ""},
		{"repeated model, the second escaped", "/v1/chat/completions", `{"model":"rv-cheap","mod\u0065l":"rv-dear",` + msgs + `}`, ""},
		{"repeated model, the first escaped", "/v1/chat/completions", `{"\u006dodel":"rv-cheap","model":"rv-dear",` + msgs + `}`, ""},
		{"model in another case", "/v1/chat/completions", `{"model":"rv-cheap","Model":"rv-dear",` + msgs + `}`, ""},
		{"model only in another case", "/v1/chat/completions", `{"MODEL":"rv-cheap",` + msgs + `}`, ""},
		{"repeated model past sixteen keys", "/v1/chat/completions", `{"model":"rv-cheap",` + fill(20) + `"model":"rv-dear",` + msgs + `}`, ""},
		{"model in another case past sixteen keys", "/v1/chat/completions", `{"model":"rv-cheap",` + fill(20) + `"mOdEl":"rv-dear",` + msgs + `}`, ""},
		{"a Kelvin sign for a k", "/v1/chat/completions", `{"model":"rv-cheap","max_to\u212aens":1,"max_tokens":99999,` + msgs + `}`, ""},
		{"a raw Kelvin sign for a k", "/v1/chat/completions", "{\"model\":\"rv-cheap\",\"max_to\u212aens\":1," + msgs + "}", ""},
		{"a long s for an s", "/v1/chat/completions", "{\"model\":\"rv-cheap\",\"\u017fize\":\"1x1\",\"size\":\"9x9\"," + msgs + "}", ""},
		{"a second object after the first", "/v1/chat/completions", `{"model":"rv-cheap",` + msgs + `} {"model":"rv-dear"}`, ""},
		{"data after the object", "/v1/chat/completions", `{"model":"rv-cheap",` + msgs + `}x`, ""},
		{"truncated", "/v1/chat/completions", `{"model":"rv-cheap",` + msgs, ""},
		{"truncated after a repeated key", "/v1/chat/completions", `{"model":"rv-cheap","model":"rv-dear",` + msgs, ""},
		{"a trailing comma", "/v1/chat/completions", `{"model":"rv-cheap",` + msgs + `,}`, ""},
		{"a lone surrogate in a key", "/v1/chat/completions", `{"model":"rv-cheap","mod\ud800el":"rv-dear",` + msgs + `}`, ""},
		{"invalid UTF-8 in a key", "/v1/chat/completions", "{\"model\":\"rv-cheap\",\"mod\xffel\":\"rv-dear\"," + msgs + "}", ""},
		{"nested models", "/v1/chat/completions", `{"metadata":{"model":"rv-dear","Model":"x"},"model":"rv-cheap",` + msgs + `,"z":[{"model":"rv-dear"}]}`, "cheap"},
		{"a very long key", "/v1/chat/completions", `{"` + strings.Repeat("k", 200<<10) + `":1,"model":"rv-dear",` + msgs + `}`, "dear"},
		{"the model at the end of a large body", "/v1/chat/completions", `{` + msgs + `,"pad":"` + strings.Repeat("a", 1<<20) + `","model":"rv-dear"}`, "dear"},
		{"escaped model value", "/v1/chat/completions", `{"model":"rv-\u0064ear",` + msgs + `}`, "dear"},
		{"responses, repeated model", "/v1/responses", `{"model":"rv-cheap","input":"hi","model":"rv-dear"}`, ""},
		{"responses, plain", "/v1/responses", `{"input":"hi","model":"rv-dear"}`, "dear"},
	} {
		rec.mu.Lock()
		before := len(rec.requests)
		rec.mu.Unlock()
		req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer mg-review-body-7e21")
		r := do(t, req)
		rec.mu.Lock()
		got := append([]recorded(nil), rec.requests[before:]...)
		rec.mu.Unlock()
		if tc.provider == "" {
			if r.status != http.StatusBadRequest || len(got) != 0 {
				t.Errorf("%s: %d %s, and %d upstream requests; want 400 and none", tc.name, r.status, r.body, len(got))
			}
			continue
		}
		if r.status != http.StatusOK || len(got) != 1 {
			t.Errorf("%s: %d %s, and %d upstream requests; want 200 and one", tc.name, r.status, r.body, len(got))
			continue
		}
		if want := "/" + tc.provider + tc.path; got[0].path != want || got[0].bodySHA != sha256.Sum256([]byte(tc.body)) || got[0].bodyLen != len(tc.body) {
			t.Errorf("%s: the upstream got %s (%d bytes), want %s and the very bytes sent (%d)", tc.name, got[0].path, got[0].bodyLen, want, len(tc.body))
		}
	}
}
