package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// imageEditTimeoutCaddyfile prices two edit models at 0.05 an image: edit-slow on a provider
// that reads each edit and answers nothing in time, edit-stalled on one whose TLS handshake never
// ends (nothing is ever written to it). The edits' upstream_timeout is 300ms.
const imageEditTimeoutCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider slow {
			base_url {{slow}}/v1
			api_key slow-key
			models edit-slow
		}
		provider stalled {
			base_url https://{{stalled}}/v1
			api_key stalled-key
			models edit-stalled
		}
		price edit-slow {
			image 0.05
		}
		price edit-stalled {
			image 0.05
		}
		key mg-edit-timeout {
			account et
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_image_edits /v1/images/edits {
			upstream_timeout 300ms
		}
	}
}
`

// TestImageEditWrittenThenTimedOutIsCharged: an edit whose request was written to its provider,
// which then did not answer in time, may have been made and billed there: it is charged its
// estimate (2 images, 0.1), as a pass-through request written and then failed is, and a retry
// with its Idempotency-Key does not make it again. One that never reached a provider's
// connection (a TLS handshake that never ends) is released. Before, both were released.
func TestImageEditWrittenThenTimedOutIsCharged(t *testing.T) {
	var got atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err == nil {
			got.Add(1)
		}
		select { // past the gateway's upstream_timeout
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	base, g := startSimGateway(t, imageEditTimeoutCaddyfile, map[string]string{"slow": slow.URL, "stalled": startStalledListener(t)})
	edit := func(model string, header ...string) response {
		t.Helper()
		body := `{"model":"` + model + `","prompt":"make it blue","n":2,"images":[{"image_url":"https://cdn.example.com/cat.png"}]}`
		req, err := http.NewRequest(http.MethodPost, base+"/v1/images/edits", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-edit-timeout")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return do(t, req)
	}

	if r := edit("edit-slow", "Idempotency-Key", "edit-timeout-1"); r.status != http.StatusGatewayTimeout {
		t.Fatalf("an edit its provider does not answer in time = %d %s; want 504", r.status, r.body)
	}
	if got.Load() != 1 {
		t.Fatalf("the slow provider read %d edits; want 1", got.Load())
	}
	if held, end := toolEnded(t, g, "et", 0); held != "0.1" || end != "settle 0.1" {
		t.Errorf("an edit written to its provider and timed out: held %q, ended %q; want held 0.1 and settled at 0.1", held, end)
	}
	// Its retry with the same key makes no second edit, nor a second charge.
	if r := edit("edit-slow", "Idempotency-Key", "edit-timeout-1"); r.status != http.StatusConflict {
		t.Errorf("the timed-out edit's retry with its Idempotency-Key = %d %s; want 409", r.status, r.body)
	}
	if got.Load() != 1 {
		t.Errorf("the slow provider read %d edits after the retry; want 1", got.Load())
	}

	from := len(ledgerEntries(t, g, "et"))
	if r := edit("edit-stalled"); r.status != http.StatusGatewayTimeout && r.status != http.StatusBadGateway {
		t.Fatalf("an edit whose provider's TLS handshake never ends = %d %s; want 504 or 502", r.status, r.body)
	}
	if held, end := toolEnded(t, g, "et", from); held != "0.1" || end != "release" {
		t.Errorf("an edit never written to a provider: held %q, ended %q; want held 0.1 and released", held, end)
	}
}
