package videotask

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// A slow read recorded again after its shard's lease became another watcher's lets the shard
// go, as poll does: the watcher must not go on reading it under the other's lease.
func TestSlowReadsLetGoOfALostShard(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	b := openBadger(t)
	ctx := context.Background()
	w := &Watcher{Tasks: &Handler{Store: b, Logger: zap.NewNop(), Now: clockAt(&clock)}, Interval: 10 * time.Second, Owner: "a", Shards: 8}
	w.init()
	id := "cgt-slow"
	shard := storage.TaskShard(id, w.Shards)
	// a believes it holds the shard; its lease is b's.
	if ok, err := b.AcquireLease(ctx, w.shardLease(shard), "b", clock, time.Minute); err != nil || !ok {
		t.Fatalf("b's AcquireLease = %v, %v", ok, err)
	}
	w.mu.Lock()
	w.held[shard] = clock.Add(w.leaseTerm())
	w.mu.Unlock()

	started := clock
	clock = clock.Add(time.Second)
	w.noteSlowReads(ctx, started, []string{id})

	w.mu.Lock()
	_, held := w.held[shard]
	w.mu.Unlock()
	if held {
		t.Fatalf("after its lease was found lost, shard %d is still held", shard)
	}
}
