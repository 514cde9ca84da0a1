package videotask

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A create's upstream calls end within maxCreateCalls even when upstream_timeout allows more, so
// that the reconciler never releases the hold of a create still calling upstream: the client
// gets 504 upstream_timeout, as for one call's timeout.
func TestCreateCallsEndWithinTheirBound(t *testing.T) {
	stalled := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stalled:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(stalled)
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = time.Minute // upstream_timeout: more than the bound below
	saved := maxCreateCalls
	maxCreateCalls = 300 * time.Millisecond
	t.Cleanup(func() { maxCreateCalls = saved })

	start := time.Now()
	w := serve(h, http.MethodPost, createPath, createBody)
	took := time.Since(start)
	if w.Code != http.StatusGatewayTimeout {
		t.Fatalf("status %d (%s), want 504", w.Code, w.Body)
	}
	if code := decode(t, w)["code"]; code != "upstream_timeout" {
		t.Fatalf("error code %v, want upstream_timeout", code)
	}
	if took > 5*time.Second {
		t.Fatalf("the create took %v, past its bound of %v", took, maxCreateCalls)
	}
}
