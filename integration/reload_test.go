package integration

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReloadWhileServing reloads to a changed config (one more model) while clients keep asking
// for the model list. Every answer must be a 200 with the old or the new list, and the store that
// backs authentication must keep answering across reloads.
func TestReloadWhileServing(t *testing.T) {
	port := freePort(t)
	vars := map[string]string{"port": fmt.Sprint(port), "extra_model": ""}
	g := startGateway(t, modelsCaddyfile, vars)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	before := []string{"gpt-4o-mini", "gpt-image-1", "seedance-lite", "seedance-pro"}
	after := []string{"gpt-4o-mini", "gpt-5", "gpt-image-1", "seedance-lite", "seedance-pro"}

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		requests atomic.Int64
		resets   atomic.Int64
		mu       sync.Mutex
		failures []string
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(20 * time.Second) // bound even if stop is never set
			for n := 0; !stop.Load() && n < 100000 && time.Now().Before(deadline); n++ {
				r, err := sendAcrossReload(base+"/v1/models", "mg-all", &resets)
				if err != nil {
					r.body = []byte(err.Error())
				}
				requests.Add(1)
				var ids []string
				if r.status == 200 {
					ids = modelIDsFrom(r)
				}
				if r.status != 200 || (!slices.Equal(ids, before) && !slices.Equal(ids, after)) {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%d %s", r.status, r.body))
					mu.Unlock()
				}
				// An unknown key is looked up in the store: a closed store would answer 500.
				if r, err := sendAcrossReload(base+"/v1/models", "mg-unknown", &resets); err != nil || r.status != 401 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("unknown key: %d %s", r.status, r.body))
					mu.Unlock()
				}
			}
		}()
	}

	time.Sleep(300 * time.Millisecond)
	for i := range 3 {
		if i%2 == 0 {
			g.vars["extra_model"] = "gpt-5"
		} else {
			g.vars["extra_model"] = ""
		}
		if err := g.reload(modelsCaddyfile); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed across reloads; first: %s", len(failures), requests.Load(), failures[0])
	}
	t.Logf("%d requests, %d connections reset by a listener swap and sent again", requests.Load(), resets.Load())
	if requests.Load() < 20 {
		t.Fatalf("only %d requests ran during the reloads", requests.Load())
	}
	if got := modelIDs(t, base, "mg-all"); !slices.Equal(got, after) {
		t.Fatalf("after the last reload the list is %v, want %v", got, after)
	}
}

// sendAcrossReload sends a GET and, when the connection is reset before any answer, sends it once
// more. On Linux a reload swaps Caddy's SO_REUSEPORT listener, and the kernel resets connections
// still queued on the old socket when it closes; a client retries those as it would any reset
// connect. Anything else, and a second reset, is a failure.
func sendAcrossReload(url, key string, resets *atomic.Int64) (response, error) {
	r, err := send("GET", url, key, nil)
	if err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)) {
		resets.Add(1)
		return send("GET", url, key, nil)
	}
	return r, err
}
