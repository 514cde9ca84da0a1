package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowProvidersCaddyfile serves the providers given (in mediagw's block) and a healthy DashScope
// provider "wan" to alice and mallory. Arguments: store directory, the slow providers' blocks,
// the healthy fake's URL, port.
const slowProvidersCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
%s
		provider wan {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan2.2-t2v-plus
		}
		key mg-alice {
			account alice
		}
		key mg-mallory {
			account mallory
		}
		watcher {
			interval 200ms
		}
		callbacks {
			allow_private
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks
		respond 404
	}
}
`

// TestWatcherSlowProviderLeavesOthers: one provider (a DashScope upstream whose task reads hang
// for 45 s each, under the 60 s upstream_timeout: a partial outage, connections accepted but not
// answered) holds 24 of mallory's tasks. Alice's task runs on another, healthy DashScope upstream
// with a callback_url; she does not poll. The slow upstream's reads hold only its share of the
// watcher's reads, so alice's succeeded callback comes about a second after her create, well
// within 30 s.
func TestWatcherSlowProviderLeavesOthers(t *testing.T) {
	t.Parallel()
	watchBesideSlowProviders(t, 1)
}

// TestWatcherKeepsAHealthyUpstreamBesideTwoSlowOnes: the same with two such providers (two
// providers in one outage, or one provider's two keys), 12 of mallory's tasks each: their shares
// shrink as both have work, and leave the healthy provider a read.
func TestWatcherKeepsAHealthyUpstreamBesideTwoSlowOnes(t *testing.T) {
	t.Parallel()
	watchBesideSlowProviders(t, 2)
}

// TestWatcherKeepsAHealthyUpstreamBesideEightSlowOnes: as watchBesideSlowProviders, with eight
// slow providers (one provider's eight keys in one outage), at the default concurrency 8. Each
// slow provider has one of mallory's tasks. Alice's task on the healthy provider must have its
// succeeded callback within 30 s, as docs/configuration.md says ("upstreams whose reads hang
// delay only their own tasks"): each upstream has a read of its own.
func TestWatcherKeepsAHealthyUpstreamBesideEightSlowOnes(t *testing.T) {
	t.Parallel()
	const n = 8
	base, rc, hanging := startBesideSlowProviders(t, n)
	for i := range n {
		r := call(t, "POST", base+taskPath, "mg-mallory", map[string]any{"model": fmt.Sprintf("wan-slow%d", i),
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("slow %d", i)}}})
		if r.status != 200 {
			t.Fatalf("mallory's create %d = %d %s", i, r.status, r.body)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); hanging.Load() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of the slow providers' reads are in flight after 20 s", hanging.Load())
		}
	}
	if seen, ok := alicesCallbackComes(t, base, rc); !ok {
		t.Fatalf("alice's task on a healthy provider had no succeeded callback 30 s after its create (callbacks seen: %v): "+
			"%d slow providers' first reads hold every one of the watcher's %d reads in flight", seen, n, n)
	}
}

// watchBesideSlowProviders runs the tests above with n slow providers.
func watchBesideSlowProviders(t *testing.T, n int) {
	base, rc, _ := startBesideSlowProviders(t, n)
	for i := range 24 {
		r := call(t, "POST", base+taskPath, "mg-mallory", map[string]any{"model": fmt.Sprintf("wan-slow%d", i%n),
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("slow %d", i)}}})
		if r.status != 200 {
			t.Fatalf("mallory's create %d = %d %s", i, r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond) // each due on its own: the polls spread over the watcher's reads
	}
	if seen, ok := alicesCallbackComes(t, base, rc); !ok {
		t.Fatalf("alice's task on a healthy provider had no succeeded callback 30 s after its create (callbacks seen: %v): "+
			"%d slow providers' reads hold every read of the watcher", seen, n)
	}
}

// startBesideSlowProviders starts a gateway (slowProvidersCaddyfile) with n slow DashScope
// providers wan-slow0… (models of the same names), whose task reads hang for 45 s each, under
// the 60 s upstream_timeout (a partial outage: connections accepted but not answered), beside the
// healthy "wan". It answers the gateway's address, the receiver of alice's callbacks, and the
// count of slow reads in flight.
func startBesideSlowProviders(t *testing.T, n int) (string, *receiver, *atomic.Int64) {
	hanging := new(atomic.Int64)
	var blocks strings.Builder
	for i := range n {
		slowFake, _ := newFakeDashScope(t, "dash-upstream-key")
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/") {
				hanging.Add(1)
				defer hanging.Add(-1)
				select {
				case <-time.After(45 * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			slowFake.ServeHTTP(w, r)
		}))
		t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
		fmt.Fprintf(&blocks, "\t\tprovider wan-slow%d {\n\t\t\tbase_url %s/api/v1\n\t\t\tapi_key dash-upstream-key\n"+
			"\t\t\tprotocol dashscope\n\t\t\tmodels wan-slow%d\n\t\t}\n", i, slow.URL, i)
	}
	_, fastURL := newFakeDashScope(t, "dash-upstream-key")
	rc := newReceiver(t, func(int) int { return 200 })
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(slowProvidersCaddyfile, t.TempDir(), blocks.String(), fastURL, port), base+"/")
	return base, rc, hanging
}

// alicesCallbackComes creates alice's task on the healthy provider with rc as its callback_url
// and reports whether its succeeded callback comes within 30 s (and the statuses seen if not).
func alicesCallbackComes(t *testing.T, base string, rc *receiver) ([]string, bool) {
	r := call(t, "POST", base+taskPath, "mg-alice", map[string]any{"model": "wan2.2-t2v-plus", "callback_url": rc.URL,
		"content": []any{map[string]any{"type": "text", "text": "a harbour at night"}}})
	if r.status != 200 {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	created := time.Now()
	for deadline := created.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, d := range rc.seen() {
			if d.status == "succeeded" {
				t.Logf("alice's succeeded callback came %v after her create", time.Since(created).Round(time.Millisecond))
				return nil, true
			}
		}
	}
	var seen []string
	for _, d := range rc.seen() {
		seen = append(seen, d.status)
	}
	return seen, false
}
