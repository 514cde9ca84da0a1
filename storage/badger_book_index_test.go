package storage

import (
	"fmt"
	"testing"
)

// TestHoldIndex is the index's contract, as sync.Map's was for the book: compare-and-swap and
// compare-and-delete only of the hold kept, and a Range whose function may change the index
// (the book's Range locks accounts, whose holders change it).
func TestHoldIndex(t *testing.T) {
	var x holdIndex
	a, b := &bookHold{}, &bookHold{}
	if got, loaded := x.LoadOrStore("h1", a); loaded || got != a {
		t.Fatalf("LoadOrStore of a new id = %p, %v", got, loaded)
	}
	if got, loaded := x.LoadOrStore("h1", b); !loaded || got != a {
		t.Fatalf("LoadOrStore of a kept id = %p, %v; want the kept one", got, loaded)
	}
	if x.CompareAndSwap("h1", b, b) {
		t.Fatal("CompareAndSwap from a hold that is not kept succeeded")
	}
	if !x.CompareAndSwap("h1", a, b) {
		t.Fatal("CompareAndSwap from the kept hold failed")
	}
	if x.CompareAndDelete("h1", a) {
		t.Fatal("CompareAndDelete of a hold that is not kept succeeded")
	}
	if got, ok := x.Load("h1"); !ok || got != b {
		t.Fatalf("Load = %p, %v; want b", got, ok)
	}
	for i := range 100 {
		x.Store(fmt.Sprint("h", i+2), a)
	}
	seen := 0
	x.Range(func(h *bookHold) bool {
		seen++
		x.CompareAndDelete("h1", b) // would deadlock were a shard's lock held
		return true
	})
	if seen < 100 || seen > 101 {
		t.Fatalf("Range saw %d holds; want 100 or 101", seen)
	}
	if _, ok := x.Load("h1"); ok {
		t.Fatal("h1 is still kept after its CompareAndDelete")
	}
	stopped := 0
	x.Range(func(*bookHold) bool { stopped++; return false })
	if stopped != 1 {
		t.Fatalf("Range went on after false: %d calls", stopped)
	}
}

// shardOf puts gateway hold ids in the shard of their last (random) hex digit, one shard per
// digit, and any other id in some shard by its hash.
func TestHoldShardOf(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range 16 {
		id := fmt.Sprintf("hold_%024x", 0xabc0+i)
		if s := shardOf(id); s != uint64(i) {
			t.Errorf("shardOf(%s) = %d, want %d", id, s, i)
		}
	}
	for _, id := range []string{"", "h", "hold_0123456789ABCDEF0123456F", "über", "task-x", "req-9"} {
		if s := shardOf(id); s >= holdShards {
			t.Errorf("shardOf(%q) = %d, past %d shards", id, s, holdShards)
		}
		seen[shardOf(id)] = true
	}
	if len(seen) < 2 {
		t.Errorf("ids that do not end in a hex digit all in shard %v", seen)
	}
}
