package integration

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestResultAddressesStayPublic: a result address comes from the provider's answer (MiniMax's
// download_url), so whoever shapes that answer chooses where the gateway connects. An address off
// the provider's host that is not public (here 127.0.0.2, standing for the gateway's admin
// endpoint, a metadata service or an operator's internal host), or on the provider's own host at
// another port (127.0.0.1, where the gateway's admin endpoint may be), directly or through a
// redirect from the provider's storage, is never connected to: the owner's content endpoint answers 502
// and the internal server is not called. The provider's own download (on its host) still
// streams.
func TestResultAddressesStayPublic(t *testing.T) {
	var internalHits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.2 (loopback): %v", err)
	}
	internal := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write([]byte("internal secret")) // a test server: a failed write shows as a short body
	})}}
	internal.Start()
	t.Cleanup(internal.Close)
	// The same internal server on the provider's own host (127.0.0.1), another port: another
	// origin, so not trusted as the provider's.
	beside := httptest.NewServer(internal.Config.Handler)
	t.Cleanup(beside.Close)
	// The provider's storage redirects one download to the internal server.
	redirecting := startFake(t, http.RedirectHandler(internal.URL+"/cdn/file-x.mp4?sig=signed", http.StatusFound))

	v := startVideoProviders(t)
	for _, cdn := range []string{internal.URL, redirecting.URL, beside.URL} {
		v.mini.cdn = cdn
		id := v.createWith(t, map[string]any{"model": "MiniMax-Hailuo-02", "content": []any{map[string]any{"type": "text", "text": "a swing"}}})
		got := pollUntil(t, v.alice, id)
		r := call(t, "GET", v.base+got.Content.VideoURL, "mg-alice", nil)
		if r.status != http.StatusBadGateway || strings.Contains(string(r.body), "internal secret") || internalHits.Load() != 0 {
			t.Fatalf("content with the download at %s = %d %s (internal server called %d times), want 502 and no call",
				cdn, r.status, r.body, internalHits.Load())
		}
	}
}
