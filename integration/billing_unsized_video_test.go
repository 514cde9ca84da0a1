package integration

import (
	"net/http"
	"strings"
	"testing"
)

// unsizedVideoCaddyfile passes Veo's predictLongRunning through to a strict fake of the Gemini
// API, as an endpoint the operator added, for a model priced per second of video only.
const unsizedVideoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider gemini {
			base_url {{gemini_url}}
			api_key gemini-operator-key
			auth_style x-goog-api-key
			models veo-pass
		}
		price veo-pass {
			second 0.40
			second 1080p 0.60
			max_seconds 8
		}
		key mg-veo-pass {
			account veo-pass
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route {
			endpoint POST /v1beta/models/{model}:predictLongRunning
		}
		reverse_proxy {{gemini_host}}
	}
}
`

// TestAddedVideoEndpointIsCharged: a video made through an endpoint the operator added (Veo's
// predictLongRunning passed through), for a model priced per second only, is held and charged
// as the model's longest video (max_seconds 8) at its dearest band (1080p, 0.60): 4.8, although
// its answer (a long-running operation) reports no video. A second one does not fit what is left
// of 6 and is a 402 that never reaches the provider. (Before, it was held as text, which the price
// does not charge: such videos were free.)
func TestAddedVideoEndpointIsCharged(t *testing.T) {
	fake, geminiURL := newFakeGemini(t, "gemini-operator-key")
	base, g := startSimGateway(t, unsizedVideoCaddyfile, map[string]string{
		"gemini_url": geminiURL, "gemini_host": strings.TrimSuffix(geminiURL, "/v1beta")})
	e := keysEnv{g: g}
	e.credit(t, "veo-pass", "6", "veo-pass-1")
	body := `{"instances":[{"prompt":"a lighthouse at dawn"}],"parameters":{"durationSeconds":8,"resolution":"1080p"}}`
	create := func() response {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1beta/models/veo-pass:predictLongRunning", strings.NewReader(body))
		req.Header.Set("x-goog-api-key", "mg-veo-pass")
		req.Header.Set("Content-Type", "application/json")
		return do(t, req)
	}
	if r := create(); r.status != 200 || !strings.Contains(string(r.body), "operations/") {
		t.Fatalf("predictLongRunning = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/veo-pass/balance", nil); r.field("balance") != "1.2" || r.field("held") != "0" {
		t.Fatalf("after one video: %s; want 1.2 left (8 s × 0.60 charged), nothing held", r.body)
	}
	calls := len(fake.log.matching("POST", "/v1beta/"))
	if r := create(); r.status != 402 {
		t.Fatalf("a second video past the balance = %d %s, want 402", r.status, r.body)
	}
	if len(fake.log.matching("POST", "/v1beta/")) != calls {
		t.Fatal("the refused video reached the provider")
	}
	ledgerEntries(t, g, "veo-pass")
}
