package storetest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testReadLogs: reads are recorded only under the reader's lease, the latest time of each id is
// kept, old records are dropped, and a lease taken after NoteReads returned sees its records.
func testReadLogs(t *testing.T, s storage.Store) {
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	const keep = 10 * time.Second
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	take := func(lease, owner string, at time.Time) {
		t.Helper()
		if ok, err := s.AcquireLease(ctx, lease, owner, at, 3*time.Second); err != nil || !ok {
			t.Fatalf("AcquireLease(%s, %s) = %v, %v", lease, owner, ok, err)
		}
	}
	note := func(owner string, at time.Time, groups ...storage.ShardReads) []int {
		t.Helper()
		lost, err := s.NoteReads(ctx, owner, at, keep, groups)
		if err != nil {
			t.Fatal(err)
		}
		return lost
	}
	recent := func(log string, since time.Time) map[string]time.Time {
		t.Helper()
		got, err := s.RecentReads(ctx, log, since)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	take("s/0", "a", t0)
	take("s/1", "a", t0)
	take("s/2", "b", t0)

	// Groups under a's leases are recorded; the group under b's lease (and one under no lease)
	// is refused and records nothing.
	lost := note("a", ms(100),
		storage.ShardReads{Lease: "s/0", Log: "r/0", IDs: []string{"x", "y"}},
		storage.ShardReads{Lease: "s/2", Log: "r/2", IDs: []string{"z"}},
		storage.ShardReads{Lease: "s/1", Log: "r/1", IDs: []string{"w"}},
		storage.ShardReads{Lease: "s/9", Log: "r/9", IDs: []string{"v"}})
	if !slices.Equal(lost, []int{1, 3}) {
		t.Fatalf("NoteReads lost = %v, want [1 3]", lost)
	}
	if got, want := recent("r/0", t0), map[string]time.Time{"x": ms(100), "y": ms(100)}; !maps.Equal(got, want) {
		t.Fatalf("RecentReads(r/0) = %v, want %v", got, want)
	}
	if got := recent("r/2", t0); len(got) != 0 {
		t.Fatalf("a refused read was recorded: %v", got)
	}
	if got := recent("r/1", t0); !maps.Equal(got, map[string]time.Time{"w": ms(100)}) {
		t.Fatalf("RecentReads(r/1) = %v", got)
	}

	// The latest time of an id wins, whatever the order of the notes.
	note("a", ms(900), storage.ShardReads{Lease: "s/0", Log: "r/0", IDs: []string{"x"}})
	note("a", ms(500), storage.ShardReads{Lease: "s/0", Log: "r/0", IDs: []string{"x", "u"}})
	if got, want := recent("r/0", t0), map[string]time.Time{"x": ms(900), "y": ms(100), "u": ms(500)}; !maps.Equal(got, want) {
		t.Fatalf("RecentReads(r/0) = %v, want %v", got, want)
	}
	// since leaves older records out.
	if got, want := recent("r/0", ms(500)), map[string]time.Time{"x": ms(900), "u": ms(500)}; !maps.Equal(got, want) {
		t.Fatalf("RecentReads(r/0, since 500ms) = %v, want %v", got, want)
	}
	// Records older than keep are dropped by a later note that trims.
	note("a", ms(20_000), storage.ShardReads{Lease: "s/0", Log: "r/0", IDs: []string{"t"}, Trim: true})
	if got := recent("r/0", t0); !maps.Equal(got, map[string]time.Time{"t": ms(20_000)}) {
		t.Fatalf("after keep: RecentReads(r/0) = %v", got)
	}

	// A lease that ran out but that nobody took is still a's for NoteReads; once b took it,
	// a's notes are refused and what a noted before stays for b to see.
	if lost := note("a", ms(25_000), storage.ShardReads{Lease: "s/1", Log: "r/1", IDs: []string{"q"}}); len(lost) != 0 {
		t.Fatalf("a's ran-out lease nobody took refused a's note: %v", lost)
	}
	take("s/1", "b", ms(25_100))
	if lost := note("a", ms(25_200), storage.ShardReads{Lease: "s/1", Log: "r/1", IDs: []string{"q", "p"}}); !slices.Equal(lost, []int{0}) {
		t.Fatalf("after b took the lease, a's note lost = %v, want [0]", lost)
	}
	if got := recent("r/1", ms(20_000)); !maps.Equal(got, map[string]time.Time{"q": ms(25_000)}) {
		t.Fatalf("b sees %v, want a's note before b took the lease", got)
	}

	// Racing: while b takes a lease from a, every note of a that was accepted is seen by b
	// after its take.
	take("s/3", "a", ms(30_000))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var accepted []string
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := "k" + strconv.Itoa(i)
			// The times stay within keep of each other: a fast loop must not trim its own
			// first notes (10,000 notes would span keep).
			lost, err := s.NoteReads(ctx, "a", ms(30_000+i%5_000), keep, []storage.ShardReads{{Lease: "s/3", Log: "r/3", IDs: []string{id}}})
			if err != nil {
				t.Error(err)
				return
			}
			if len(lost) == 0 {
				mu.Lock()
				accepted = append(accepted, id)
				mu.Unlock()
			}
		}
	})
	time.Sleep(20 * time.Millisecond)
	// b takes the lease (it ran out by b's clock), then reads the log.
	take("s/3", "b", ms(40_000))
	seen := recent("r/3", ms(30_000))
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(accepted) == 0 {
		t.Fatal("no note of a was accepted before b took the lease")
	}
	for _, id := range accepted {
		if _, ok := seen[id]; !ok {
			t.Fatalf("a's note of %s was accepted but b, reading after its take, does not see it", id)
		}
	}
}
