package integration

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
		mu       sync.Mutex
		failures []string
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(20 * time.Second) // bound even if stop is never set
			for n := 0; !stop.Load() && n < 100000 && time.Now().Before(deadline); n++ {
				r, err := send("GET", base+"/v1/models", "mg-all", nil)
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
				if r, err := send("GET", base+"/v1/models", "mg-unknown", nil); err != nil || r.status != 401 {
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
	if requests.Load() < 20 {
		t.Fatalf("only %d requests ran during the reloads", requests.Load())
	}
	if got := modelIDs(t, base, "mg-all"); !slices.Equal(got, after) {
		t.Fatalf("after the last reload the list is %v, want %v", got, after)
	}
}
