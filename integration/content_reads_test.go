package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// contentReadsCaddyfile serves one MiniMax upstream with the given max_rps to alice, bob and
// mallory, with the watcher's interval given. Arguments: store directory, the fake's URL,
// max_rps, watcher interval, port.
const contentReadsCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider hailuo {
			base_url %s
			api_key minimax-upstream-key
			protocol minimax
			models MiniMax-Hailuo-02
			max_rps %s
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
		key mg-mallory {
			account mallory
		}
		watcher {
			interval %s
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

// startContentReads starts a gateway in front of a strict MiniMax fake (contentReadsCaddyfile).
func startContentReads(t *testing.T, maxRPS, interval string) (*fakeMiniMax, string) {
	mm, mmURL := newFakeMiniMax(t, "minimax-upstream-key")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(contentReadsCaddyfile, t.TempDir(), mmURL, maxRPS, interval, port), base+"/")
	return mm, base
}

// getContent asks for a task's content with key; it answers the status, the body and the
// Retry-After header.
func getContent(ctx context.Context, base, key, id string) (int, []byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+taskPath+"/"+id+"/content", nil)
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header.Get("Retry-After"), err
}

// minimaxLookups counts the calls made to the MiniMax API to read tasks and resolve files.
func minimaxLookups(mm *fakeMiniMax) int {
	return len(mm.log.matching("GET", "/v1/query/")) + len(mm.log.matching("GET", "/v1/files/retrieve"))
}

// TestContentReadsKeepToMaxRPS: a MiniMax upstream with max_rps 1; mallory's task has succeeded
// and she asks for its content 40 times at once. Each content read resolves the file with the
// operator's key; the 40 must share their lookups and take max_rps shares, not make 80 calls in
// a few milliseconds (which spends the operator's rate limit at MiniMax for every tenant).
func TestContentReadsKeepToMaxRPS(t *testing.T) {
	t.Parallel()
	mm, base := startContentReads(t, "1", "200ms")
	id := createSucceeded(t, base, "mg-mallory", "MiniMax-Hailuo-02")
	time.Sleep(2 * time.Second) // the pace's budget is back to its burst
	before := minimaxLookups(mm)
	start := time.Now()
	var wg sync.WaitGroup
	var streamed atomic.Int64
	for range 40 {
		wg.Go(func() {
			if status, body, _, err := getContent(context.Background(), base, "mg-mallory", id); err == nil && status == 200 && string(body) == string(mm.Video) {
				streamed.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	calls := minimaxLookups(mm) - before
	if allowed := 2 + 2*int(elapsed.Seconds()+1); calls > allowed {
		t.Fatalf("40 content requests made %d calls to the MiniMax API with the operator's key in %v; max_rps 1 allows about %d",
			calls, elapsed.Round(time.Millisecond), allowed)
	}
	if streamed.Load() == 0 {
		t.Fatalf("none of 40 content reads streamed the video (%d calls in %v)", calls, elapsed.Round(time.Millisecond))
	}
}

// TestContentReadWaitsItsTurnAmongTheWatchersReads: max_rps 2 and more running tasks (bob's 12)
// than the watcher can read each interval, so that it would take every share. Alice's task has
// succeeded; she asks for its content and, at each 429, waits the Retry-After it names, as
// docs/api.md tells a client to. Content reads have their part of max_rps: she has her video
// within 30 s.
func TestContentReadWaitsItsTurnAmongTheWatchersReads(t *testing.T) {
	t.Parallel()
	mm, base := startContentReads(t, "2", "1s")
	id := createSucceeded(t, base, "mg-alice", "MiniMax-Hailuo-02")
	for i := range 12 {
		r := call(t, "POST", base+taskPath, "mg-bob", map[string]any{"model": "MiniMax-Hailuo-02",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("a long one %d [slow]", i)}}})
		if r.status != 200 {
			t.Fatalf("bob's create %d = %d %s", i, r.status, r.body)
		}
	}
	// The watcher is reading bob's tasks at max_rps.
	for deadline, reads := time.Now().Add(20*time.Second), minimaxLookups(mm); minimaxLookups(mm) < reads+12; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not read bob's tasks: %d reads in 20 s", minimaxLookups(mm)-reads)
		}
	}

	tries, refused := 0, 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		tries++
		status, body, retryAfter, err := getContent(context.Background(), base, "mg-alice", id)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK && string(body) == string(mm.Video) {
			t.Logf("alice had her video at try %d (%d refused)", tries, refused)
			return
		}
		if status != http.StatusTooManyRequests {
			t.Fatalf("content = %d %.300s", status, body)
		}
		refused++
		wait, err := strconv.Atoi(retryAfter)
		if err != nil || wait < 1 {
			t.Fatalf("a 429 without a usable Retry-After: %q", retryAfter)
		}
		time.Sleep(time.Duration(wait) * time.Second)
	}
	t.Fatalf("alice's content read was answered 429 %d times in a row over 30 s, each time after the Retry-After it named: "+
		"the watcher's reads of bob's running tasks take every share of max_rps", refused)
}

// TestContentReadsLeaveOtherAccountsTheirReads: max_rps 2; mallory asks for the content of her
// own finished task in four loops. Alice's task on the same upstream (four reads to succeed at
// the fake) must still be read on time: her succeeded callback comes within 10 s of her create
// (about 2 s without mallory's loops).
func TestContentReadsLeaveOtherAccountsTheirReads(t *testing.T) {
	t.Parallel()
	mm, base := startContentReads(t, "2", "200ms")
	rc := newReceiver(t, func(int) int { return 200 })
	mine := createSucceeded(t, base, "mg-mallory", "MiniMax-Hailuo-02")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var streamed, refused atomic.Int64
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				status, body, _, err := getContent(ctx, base, "mg-mallory", mine)
				switch {
				case err != nil:
				case status == 200 && string(body) == string(mm.Video):
					streamed.Add(1)
				default:
					refused.Add(1)
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); streamed.Load()+refused.Load() < 4; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("mallory's content loops had no answer in 10 s")
		}
	}

	r := call(t, "POST", base+taskPath, "mg-alice", map[string]any{"model": "MiniMax-Hailuo-02", "callback_url": rc.URL,
		"content": []any{map[string]any{"type": "text", "text": "a harbour at night"}}})
	if r.status != 200 {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	created := time.Now()
	for deadline := created.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, d := range rc.seen() {
			if d.status == "succeeded" {
				t.Logf("alice's succeeded callback came %v after her create (mallory: %d streamed, %d refused)",
					time.Since(created).Round(time.Millisecond), streamed.Load(), refused.Load())
				return
			}
		}
	}
	t.Fatalf("alice's task had no succeeded callback 10 s after its create while mallory read her own content in a loop "+
		"(%d streamed, %d refused): her content reads take the upstream's max_rps from the watcher's reads of every account's tasks",
		streamed.Load(), refused.Load())
}

// TestOneAccountsParallelDownloadsWithoutMaxRPS: a MiniMax upstream without max_rps whose
// files/retrieve answers in 3 s. Alice fetches her three finished videos at once (a client
// downloading a batch), the gateway otherwise idle. Without max_rps nothing is to be shared: all
// three must stream (on main they do, in about 3 s).
func TestOneAccountsParallelDownloadsWithoutMaxRPS(t *testing.T) {
	t.Parallel()
	mm, _ := newFakeMiniMax(t, "minimax-upstream-key") // served through slow below
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/files/retrieve" {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		mm.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	mm.cdn = slow.URL // the download on the upstream's own origin, as the fake has it
	caddyfile := strings.Replace(contentReadsCaddyfile, "\t\t\tmax_rps %s\n", "", 1)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(caddyfile, t.TempDir(), slow.URL+"/v1", "200ms", port), base+"/")
	var ids []string
	for range 3 {
		ids = append(ids, createSucceeded(t, base, "mg-alice", "MiniMax-Hailuo-02"))
	}
	var wg sync.WaitGroup
	got := make([]string, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			start := time.Now()
			status, body, retry, err := getContent(context.Background(), base, "mg-alice", id)
			got[i] = fmt.Sprintf("%s: %d (Retry-After %q, %v, err %v, video %v)", id, status, retry,
				time.Since(start).Round(100*time.Millisecond), err, string(body) == string(mm.Video))
		})
	}
	wg.Wait()
	for _, g := range got {
		if !strings.Contains(g, ": 200 ") {
			t.Fatalf("alice's three downloads at once, no max_rps, idle gateway:\n%s", strings.Join(got, "\n"))
		}
	}
}

// TestContentReadsOfAnIdleGatewayAreNotRefused: max_rps 2 on a MiniMax upstream; alice,
// bob and mallory each have one finished video and each fetch it once, at the same moment, while
// the watcher has nothing to read (the gateway is idle). Every one of them must have its video:
// nobody else is using the upstream's max_rps.
func TestContentReadsOfAnIdleGatewayAreNotRefused(t *testing.T) {
	t.Parallel()
	mm, base := startContentReads(t, "2", "200ms")
	keys := []string{"mg-alice", "mg-bob", "mg-mallory"}
	ids := make([]string, len(keys))
	for i, key := range keys {
		r := call(t, "POST", base+taskPath, key, map[string]any{"model": "MiniMax-Hailuo-02",
			"content": []any{map[string]any{"type": "text", "text": "a lighthouse"}}})
		if ids[i] = r.field("id"); r.status != 200 || ids[i] == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
	}
	for i, key := range keys {
		for deadline := time.Now().Add(30 * time.Second); call(t, "GET", base+taskPath+"/"+ids[i], key, nil).field("status") != "succeeded"; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s's task did not succeed in 30 s", key)
			}
		}
	}
	time.Sleep(3 * time.Second) // the watcher is done; its calls are long paid for
	var wg sync.WaitGroup
	got := make([]string, len(keys))
	for i, key := range keys {
		wg.Go(func() {
			start := time.Now()
			status, body, retry, err := getContent(context.Background(), base, key, ids[i])
			got[i] = fmt.Sprintf("%s: %d (Retry-After %q, %v, err %v, video %v)", key, status, retry,
				time.Since(start).Round(100*time.Millisecond), err, string(body) == string(mm.Video))
		})
	}
	wg.Wait()
	for _, g := range got {
		if !strings.Contains(g, ": 200 ") {
			t.Fatalf("three accounts each fetching their finished video once on an idle gateway:\n%s", strings.Join(got, "\n"))
		}
	}
}
