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

// clockAt is a clock that reads *at: a test moves it by assigning to *at.
func clockAt(at *time.Time) func() time.Time {
	return func() time.Time { return *at }
}

// The shards are divided between the live watchers. A shard handed over to a new watcher is
// freed at once, or, with a read of it in flight, once that read is done; its new holder
// schedules each of its tasks an Interval after the read recorded in the shard's read log. When
// a watcher stops renewing (its process died), the survivor takes its shards over once its
// leases and heartbeat have run out (a term and a tick, not an Interval), and the dead watcher
// could record no read under its lost leases. Run on both backends: one Redis shared by two
// clients (two processes), and Badger.
func TestShardOwnershipMovesToTheSurvivor(t *testing.T) {
	for name, open := range twoInstanceStores {
		t.Run(name, func(t *testing.T) {
			clock := time.Unix(1_800_000_000, 0)
			storeA, storeB := open(t)
			const interval = 10 * time.Second
			watcher := func(owner string, s storage.Store) *Watcher {
				w := &Watcher{Tasks: &Handler{Store: s, Logger: zap.NewNop(), Now: clockAt(&clock)}, Interval: interval, Owner: owner, Shards: 8}
				w.init()
				return w
			}
			a, b := watcher("a", storeA), watcher("b", storeB)
			ctx := context.Background()
			tick := func(ws ...*Watcher) {
				clock = clock.Add(a.ownershipTick())
				for _, w := range ws {
					w.ownTickAndScan(ctx)
				}
			}
			all := []int{0, 1, 2, 3, 4, 5, 6, 7}
			even, odd := []int{0, 2, 4, 6}, []int{1, 3, 5, 7}
			// Two unfinished tasks of shard 1 and one of shard 5.
			var inShard1, inShard5 []string
			for i := 0; len(inShard1) < 2 || len(inShard5) < 1; i++ {
				id := "cgt-" + strconv.Itoa(i)
				switch storage.TaskShard(id, 8) {
				case 1:
					if len(inShard1) == 2 {
						continue
					}
					inShard1 = append(inShard1, id)
				case 5:
					if len(inShard5) == 1 {
						continue
					}
					inShard5 = append(inShard5, id)
				default:
					continue
				}
				task := storage.Task{ID: id, Kind: storage.KindVideo, Account: "acme", KeyID: "k1", Provider: "p",
					Model: "m", Status: "queued", CreatedAt: clock.Unix(), UpdatedAt: clock.Unix(), ExpiresAt: time.Now().Add(time.Hour).Unix()}
				if _, err := storeA.CreateTask(ctx, task); err != nil {
					t.Fatal(err)
				}
			}

			// Alone, a takes every shard.
			tick(a)
			if got := a.heldShards(); !slices.Equal(got, all) {
				t.Fatalf("a alone holds %v", got)
			}
			// a reads the first task of shard 1 now (recorded under its lease), and has a read
			// of shard 5 in flight. b joins: a stops reading b's half at once and frees the
			// shards it is not reading; shard 5 once its read is done.
			readAt := clock
			if lost, err := storeA.NoteReads(ctx, "a", readAt, a.readKeep(), a.readGroups(inShard1[:1])); err != nil || len(lost) != 0 {
				t.Fatalf("a's NoteReads = %v, %v", lost, err)
			}
			a.startReads(inShard5)
			b.divide(ctx) // joins
			tick(a, b)
			if got, gotB := a.heldShards(), b.heldShards(); !slices.Equal(got, []int{0, 2, 4, 5, 6}) || !slices.Equal(gotB, []int{1, 3, 7}) {
				t.Fatalf("after b joined: a holds %v, b %v", got, gotB)
			}
			a.mu.Lock()
			ok5, _ := a.readable(5)
			a.mu.Unlock()
			if ok5 {
				t.Fatal("a may still start reads of shard 5, which is b's now")
			}
			// b holds shard 1 a tick after a's read: the task a read is not read before an
			// Interval after that read, the other one is read now.
			ids, _ := b.next(10)
			if slices.Contains(ids, inShard1[0]) || !slices.Contains(ids, inShard1[1]) {
				t.Fatalf("b's due tasks a tick after a read %s: %v; want %s and not %s", inShard1[0], ids, inShard1[1], inShard1[0])
			}
			b.mu.Lock()
			due := map[string]time.Time{}
			for _, q := range b.queue {
				due[q.id] = q.due
			}
			b.mu.Unlock()
			if got := due[inShard1[0]]; !got.Equal(readAt.Add(interval)) {
				t.Fatalf("b scheduled the task a read at %v at %v, want an interval after a's read", readAt, got)
			}
			a.doneReads(inShard5)
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
			// its half; then it takes a's half too, well within an interval.
			died := clock
			for clock.Add(a.ownershipTick()).Before(died.Add(a.leaseTerm())) {
				tick(b)
				if got := b.heldShards(); !slices.Equal(got, odd) {
					t.Fatalf("%v after a died, b holds %v", clock.Sub(died), got)
				}
			}
			tick(b)
			if got := b.heldShards(); !slices.Equal(got, all) {
				t.Fatalf("%v after a died, b holds %v, want every shard", clock.Sub(died), got)
			}
			if took := clock.Sub(died); took > a.leaseTerm()+a.ownershipTick() || took > interval/2 {
				t.Fatalf("b took a's shards over %v after a died", took)
			}
			// a's leases are b's: a (had it only stalled) can neither take them back nor record
			// a read under them.
			for _, shard := range even {
				if ok, err := storeA.AcquireLease(ctx, a.shardLease(shard), "a", clock, time.Minute); err != nil || ok {
					t.Fatalf("a could take back shard %d from b: %v %v", shard, ok, err)
				}
			}
			groups := []storage.ShardReads{{Lease: a.shardLease(0), Log: a.readLog(0), IDs: []string{"cgt-x"}}}
			if lost, err := storeA.NoteReads(ctx, "a", clock, a.readKeep(), groups); err != nil || !slices.Equal(lost, []int{0}) {
				t.Fatalf("a's NoteReads under b's lease = %v, %v; want it refused", lost, err)
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
	b := openBadger(t)
	watcher := func(owner string, shards int) *Watcher {
		w := &Watcher{Tasks: &Handler{Store: b, Logger: zap.NewNop(), Now: clockAt(&clock)}, Interval: 10 * time.Second, Owner: owner, Shards: shards}
		w.init()
		return w
	}
	ws := []*Watcher{watcher("a", 8), watcher("b", 5)}
	ctx := context.Background()
	for range 5 {
		clock = clock.Add(ws[0].ownershipTick())
		for _, w := range ws {
			w.ownTickAndScan(ctx)
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

// ownTickAndScan is a tick of own with the scan of the shards it took, which own runs in the
// background, done before it returns.
func (w *Watcher) ownTickAndScan(ctx context.Context) {
	if gained := w.ownTick(ctx); len(gained) > 0 {
		w.watchShards(ctx, gained)
	}
}

// slowScanStore is a store whose scans of the unfinished tasks wait until release is closed.
type slowScanStore struct {
	storage.Store
	started chan struct{}
	release chan struct{}
}

func (s *slowScanStore) UnfinishedTaskIDs(ctx context.Context, shards int, want func(shard int) bool, fn func(id string) bool) error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.UnfinishedTaskIDs(ctx, shards, want, fn)
}

// A scan of the unfinished tasks of the shards taken that lasts longer than a lease does not
// keep the watcher from renewing its leases: they stay its own, and no other watcher may take
// them meanwhile.
func TestSlowScanKeepsTheLeases(t *testing.T) {
	b := openBadger(t)
	store := &slowScanStore{Store: b, started: make(chan struct{}, 1), release: make(chan struct{})}
	w := &Watcher{Tasks: &Handler{Store: store, Logger: zap.NewNop()}, Interval: 3 * time.Second, Owner: "a", Shards: 4}
	w.init()
	ctx, cancel := context.WithCancel(context.Background())
	owned := make(chan struct{})
	go func() { defer close(owned); w.own(ctx) }()
	defer func() { cancel(); <-owned }()
	defer close(store.release)

	select {
	case <-store.started:
	case <-time.After(time.Minute):
		t.Fatal("no scan started")
	}
	// Three lease terms while the scan waits.
	time.Sleep(3 * w.leaseTerm())
	if ok, err := b.AcquireLease(context.Background(), w.shardLease(0), "b", time.Now(), time.Minute); err != nil || ok {
		t.Fatalf("during a slow scan another watcher took shard 0: %v, %v", ok, err)
	}
	w.mu.Lock()
	leased := w.leased(0)
	w.mu.Unlock()
	if !leased {
		t.Fatal("during a slow scan the watcher's lease of shard 0 ran out")
	}
}

// leaseCountingStore counts the lease renewals a watcher asks of its store.
type leaseCountingStore struct {
	storage.Store
	renewOne, renewMany, renewed int
}

func (s *leaseCountingStore) RenewLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) error {
	s.renewOne++
	return s.Store.RenewLease(ctx, name, owner, now, ttl)
}

func (s *leaseCountingStore) RenewLeases(ctx context.Context, names []string, owner string, now time.Time, ttl time.Duration) ([]int, error) {
	s.renewMany++
	s.renewed += len(names)
	return s.Store.RenewLeases(ctx, names, owner, now, ttl)
}

// A tick renews every shard lease of a watcher in one call to the store (one round trip on
// Redis), not one per shard; a shard whose lease another watcher has taken meanwhile is dropped
// at that tick, and the others stay held for a term from the tick.
func TestATickRenewsEveryShardLeaseInOneCall(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	srv := testredis.Start(t, testredis.Options{})
	r, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	store := &leaseCountingStore{Store: r}
	w := &Watcher{Tasks: &Handler{Store: store, Logger: zap.NewNop(), Now: clockAt(&clock)}, Interval: 10 * time.Second, Owner: "a", Shards: DefaultWatchShards}
	w.init()
	ctx := context.Background()
	all := make([]int, DefaultWatchShards)
	for i := range all {
		all[i] = i
	}
	w.ownTickAndScan(ctx) // alone: takes every shard
	if got := w.heldShards(); !slices.Equal(got, all) {
		t.Fatalf("a alone holds %v", got)
	}

	// Shard 5's lease ends (a stalled renewal) and another watcher takes it.
	if err := r.ReleaseLease(ctx, w.shardLease(5), "a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.AcquireLease(ctx, w.shardLease(5), "b", clock, time.Minute); err != nil || !ok {
		t.Fatalf("b's AcquireLease = %v, %v", ok, err)
	}
	clock = clock.Add(w.ownershipTick())
	w.ownTickAndScan(ctx)
	if store.renewMany != 1 || store.renewed != DefaultWatchShards || store.renewOne != 0 {
		t.Fatalf("a tick renewed %d leases in %d calls (and %d single renewals); want %d in 1",
			store.renewed, store.renewMany, store.renewOne, DefaultWatchShards)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(s int) bool { return s == 5 })
	if got := w.heldShards(); !slices.Equal(got, want) {
		t.Fatalf("after losing shard 5 a holds %v", got)
	}
	w.mu.Lock()
	until := w.held[0]
	w.mu.Unlock()
	if !until.Equal(clock.Add(w.leaseTerm())) {
		t.Fatalf("shard 0's lease runs until %v; want a term from the tick, %v", until, clock.Add(w.leaseTerm()))
	}
	// b holds shard 5 still: the renewal left it alone.
	if ok, err := r.AcquireLease(ctx, w.shardLease(5), "c", clock, time.Minute); err != nil || ok {
		t.Fatalf("b's lease of shard 5 was taken over by a renewal: AcquireLease by c = %v, %v", ok, err)
	}
}
