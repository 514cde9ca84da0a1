package videotask

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// setClock makes the package's clock return *at for the rest of the test.
func setClock(t *testing.T, at *time.Time) {
	prev := now
	now = func() time.Time { return *at }
	t.Cleanup(func() { now = prev })
}

// The shards are divided between the live watchers; a shard handed over to a new watcher changes
// hands an interval after its last read, not before; and when a watcher stops renewing (its
// process died), the survivor takes its shards over once its leases and heartbeat have run out,
// and not before. Run on both backends:
// one Redis shared by two clients (two processes), and Badger.
func TestShardOwnershipMovesToTheSurvivor(t *testing.T) {
	backends := map[string]func(t *testing.T) (storage.Store, storage.Store){
		"badger": func(t *testing.T) (storage.Store, storage.Store) {
			b, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b, b
		},
		"redis": func(t *testing.T) (storage.Store, storage.Store) {
			srv := testredis.Start(t, testredis.Options{})
			open := func() storage.Store {
				r, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL(), Logger: zap.NewNop()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}
			return open(), open()
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			clock := time.Unix(1_800_000_000, 0)
			setClock(t, &clock)
			storeA, storeB := open(t)
			const interval = 10 * time.Second
			watcher := func(owner string, s storage.Store) *Watcher {
				w := &Watcher{Tasks: &Handler{Store: s, Logger: zap.NewNop()}, Interval: interval, Owner: owner, Shards: 8}
				w.init()
				return w
			}
			a, b := watcher("a", storeA), watcher("b", storeB)
			ctx := context.Background()
			tick := func(ws ...*Watcher) {
				clock = clock.Add(a.ownershipTick())
				for _, w := range ws {
					w.divide(ctx)
				}
			}
			all := []int{0, 1, 2, 3, 4, 5, 6, 7}
			even, odd := []int{0, 2, 4, 6}, []int{1, 3, 5, 7}

			// Alone, a takes every shard.
			a.divide(ctx)
			if got := a.heldShards(); !slices.Equal(got, all) {
				t.Fatalf("a alone holds %v", got)
			}
			// a read shard 1 just now. b joins: a stops reading b's half at once and hands it
			// over: the shards it never read at once, shard 1 an interval (and a tick) after its
			// read, so that b cannot read its tasks again too soon.
			readAt := clock
			a.mu.Lock()
			a.lastRead[1] = readAt
			a.mu.Unlock()
			b.divide(ctx)
			a.divide(ctx)
			if got, gotB := a.heldShards(), b.heldShards(); !slices.Equal(got, even) || len(gotB) != 0 {
				t.Fatalf("after b joined: a holds %v, b %v", got, gotB)
			}
			tick(a, b)
			if got := b.heldShards(); !slices.Equal(got, []int{3, 5, 7}) {
				t.Fatalf("a tick after a handed its unread shards over, b holds %v", got)
			}
			for clock.Before(readAt.Add(interval)) {
				tick(a, b)
				if got := b.heldShards(); slices.Contains(got, 1) {
					t.Fatalf("b took shard 1 %v after a read it", clock.Sub(readAt))
				}
			}
			tick(a, b)
			tick(a, b)
			if gotA, gotB := a.heldShards(), b.heldShards(); !slices.Equal(gotA, even) || !slices.Equal(gotB, odd) {
				t.Fatalf("two watchers: a holds %v, b %v", gotA, gotB)
			}
			for shard := range 8 {
				a.mu.Lock()
				okA, _ := a.readable(shard)
				a.mu.Unlock()
				b.mu.Lock()
				okB, _ := b.readable(shard)
				b.mu.Unlock()
				if okA == okB {
					t.Fatalf("shard %d readable by a: %v, by b: %v", shard, okA, okB)
				}
			}

			// a stops renewing (killed). Until its leases and heartbeat have run out, b keeps
			// its half; then it takes a's half too.
			died := clock
			for clock.Before(died.Add(a.leaseTerm() - a.ownershipTick())) {
				tick(b)
				if got := b.heldShards(); !slices.Equal(got, odd) {
					t.Fatalf("%v after a died, b holds %v", clock.Sub(died), got)
				}
			}
			for range 3 {
				tick(b)
			}
			if got := b.heldShards(); !slices.Equal(got, all) {
				t.Fatalf("%v after a died, b holds %v, want every shard", clock.Sub(died), got)
			}
			if took := clock.Sub(died); took > interval+3*a.ownershipTick()+a.ownershipTick() {
				t.Fatalf("b took a's shards over %v after a died", took)
			}
			for _, lease := range even {
				if ok, err := storeA.AcquireLease(ctx, a.shardLease(lease), "a", clock, time.Minute); err != nil || ok {
					t.Fatalf("a could take back shard %d from b: %v %v", lease, ok, err)
				}
			}
		})
	}
}

// Watchers that divide the tasks into different numbers of shards (instances of two versions
// during a rolling upgrade) must not leave any task unread: each settles its shards with the
// watchers of its own number, so a task is read by one watcher of each number at most, and by
// at least one.
func TestWatchersWithDifferentShardCountsMissNoTask(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	setClock(t, &clock)
	b, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	watcher := func(owner string, shards int) *Watcher {
		w := &Watcher{Tasks: &Handler{Store: b, Logger: zap.NewNop()}, Interval: 10 * time.Second, Owner: owner, Shards: shards}
		w.init()
		return w
	}
	ws := []*Watcher{watcher("a", 8), watcher("b", 5)}
	ctx := context.Background()
	for range 5 {
		clock = clock.Add(ws[0].ownershipTick())
		for _, w := range ws {
			w.divide(ctx)
		}
	}
	for i := range 200 {
		id := "cgt-" + strconv.Itoa(i)
		readers := 0
		for _, w := range ws {
			w.mu.Lock()
			if ok, _ := w.readable(storage.TaskShard(id, w.Shards)); ok {
				readers++
			}
			w.mu.Unlock()
		}
		if readers == 0 {
			t.Fatalf("task %s is read by no watcher (a holds %v, b %v)", id, ws[0].heldShards(), ws[1].heldShards())
		}
	}
}
