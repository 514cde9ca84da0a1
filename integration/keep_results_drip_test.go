package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestKeptResultDripDoesNotStarveOtherAccounts: keep_results with its default concurrency (4)
// and min_rate. Mallory's provider answers each of four succeeded tasks' video (on its own
// origin, which the gateway trusts) with a 1 MiB Content-Length and then one byte every 200 ms.
// Each copy makes progress, so the stall check (nothing for a lease) never fires; before the fix
// nothing else bounded one copy's time, and the four copies held every copy slot of the instance
// for ~58 hours, so that Alice's task, whose video is served at once, stayed running (its slot and
// hold kept). Now a source under min_rate fails its attempt after about a lease, and Alice's copy
// gets a slot.
func TestKeptResultDripDoesNotStarveOtherAccounts(t *testing.T) {
	t.Parallel()
	k := newKeepSetup(t, false, 200_000,
		"storage badger "+t.TempDir()+"\n\t\tkey mg-mallory {\n\t\t\taccount mallory\n\t\t}")
	startCaddyProcess(t, k.cfg, k.base+"/")

	k.up.mu.Lock()
	k.up.videoURL = k.up.URL + "/files/drip.mp4"
	k.up.mu.Unlock()
	var dripping []string
	for i := range 4 {
		r := call(t, "POST", k.base+"/api/v3/contents/generations/tasks", "mg-mallory",
			fmt.Sprintf(`{"model":"seedance-keep","content":[{"type":"text","text":"drip %d"}]}`, i))
		if r.status != 200 {
			t.Fatalf("mallory's create = %d %s", r.status, r.body)
		}
		dripping = append(dripping, r.field("id"))
	}
	waitFor(t, "four copies reading the dripping source", func() bool { return k.up.dripping.Load() >= 4 })

	k.up.mu.Lock()
	k.up.videoURL = "" // alice's task: the fake's own video, served at once
	k.up.mu.Unlock()
	r := call(t, "POST", k.base+"/api/v3/contents/generations/tasks", "mg-alice",
		`{"model":"seedance-keep","content":[{"type":"text","text":"alice's video"}]}`)
	if r.status != 200 {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	alice := r.field("id")

	deadline := time.Now().Add(45 * time.Second)
	var last response
	for time.Now().Before(deadline) {
		last = call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+alice, "mg-alice", nil)
		if last.field("status") == "succeeded" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	m := call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+dripping[0], "mg-mallory", nil)
	t.Fatalf("alice's task is still %q 45 s after its provider reported success (%d upstream downloads of "+
		"alice's video): mallory's four dripping copies hold every copy slot (mallory's task: %q)",
		last.field("status"), k.up.downloads.Load(), m.field("status"))
}
