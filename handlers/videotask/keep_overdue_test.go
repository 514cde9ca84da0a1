package videotask

import (
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// TestKeptCopyEndsWhenOverdue: keep_results, and a provider whose succeeded task's video URL
// announces 1 MiB and sends one byte every 50 ms (a slow or hostile result host). However its
// copy goes, a task whose copy is still pending when it runs past the longest execution time and
// its grace (72 h + 10 min), past which the gateway expires any unfinished task so that no slot
// or hold is kept for ever, is given up: the task ends succeeded with the provider's own result
// (Keeper's doc: "so that no task stays running forever"). Before the fix a pending copy was
// never overdue and the task read running for ever.
func TestKeptCopyEndsWhenOverdue(t *testing.T) {
	clock := newKeepClock()
	h, videoURL := newDrippingHandler(t, &Keeper{Attempts: 2, Lease: 900 * time.Millisecond}, clock.now)
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	if got := decode(t, serve(h, "GET", createPath+"/cgt-drip", "")); got["status"] != "running" {
		t.Fatalf("a success being kept answers %v; want running", got)
	}
	waitUntil(t, "the copy to be claimed", func() bool { return keepJobIn(t, h.Store, "cgt-drip").Owner != "" })
	time.Sleep(3 * time.Second) // three leases: a stalled copy would have been stopped by now
	clock.add(storage.MaxTaskRun + time.Hour)
	got := decode(t, serve(h, "GET", createPath+"/cgt-drip", ""))
	j := keepJobIn(t, h.Store, "cgt-drip")
	if got["status"] == "running" {
		t.Fatalf("73 h after its create the task still reads running (copy attempts %d, owner %q): a copy has no bound on its time and a pending copy is never overdue", j.Attempts, j.Owner)
	}
	content, _ := got["content"].(map[string]any)
	if got["status"] != "succeeded" || content["video_url"] != videoURL || !j.GaveUp {
		t.Fatalf("an overdue copy answers %v (job %+v); want succeeded with the provider's video_url, the copy given up", got, j)
	}
}
