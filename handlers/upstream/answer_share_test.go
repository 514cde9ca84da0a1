package upstream

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An account holds at most its share: past it, its own answers find no room (pastShare) while
// another account's do; what it gives back is its own again.
func TestAnAccountHoldsAtMostItsShare(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 256<<10)
	a1, ok := budget.Reserve("a", 200<<10)
	if !ok {
		t.Fatal("a reservation within the share refused")
	}
	if _, ok := budget.Reserve("a", 100<<10); ok {
		t.Fatal("an account's second answer past its share was reserved")
	}
	if !a1.growTo(256<<10) || budget.Held() != 256<<10 {
		t.Fatalf("an account's one answer up to its share: %d held", budget.Held())
	}
	b, ok := budget.Reserve("b", 256<<10)
	if !ok {
		t.Fatal("another account was refused its share while the first holds its own")
	}
	a1.Release()
	if a2, ok := budget.Reserve("a", 256<<10); !ok {
		t.Fatal("the account's share was not given back with its answer")
	} else {
		a2.Release()
	}
	b.Release()
	if budget.Held() != 0 {
		t.Fatalf("%d held after every release", budget.Held())
	}
}

// Nothing is borrowed: an answer that would take its account past its share is refused even in
// an idle budget, at once, for its own share; an answer within its share refused for want of
// room is not reported past its share.
func TestAnAnswerPastTheShareIsRefusedEvenWithRoomLeft(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 256<<10)
	big, ok := budget.ReserveWaiting("a", 64<<10, time.Minute)
	if !ok {
		t.Fatal("a reservation within the share was refused")
	}
	began := time.Now()
	if big.growTo(300<<10) || !big.pastShare() || time.Since(began) > 10*time.Second {
		t.Fatalf("an answer past its share took room, or waited for it (%v), or its refusal is not its own share's: %d held", time.Since(began), budget.Held())
	}
	big.Release()
	others := make([]*AnswerHold, 0, 4)
	for _, account := range []string{"b", "c", "d", "e"} {
		h, ok := budget.Reserve(account, 256<<10)
		if !ok {
			t.Fatal("an account's share refused")
		}
		others = append(others, h)
	}
	small, _ := budget.Reserve("f", 0)
	if small.growTo(1) || small.pastShare() {
		t.Fatalf("an answer within its share took room there is not, or its refusal is its share's: %d held", budget.Held())
	}
	for _, h := range others {
		h.Release()
	}
	if !small.growTo(256<<10) || budget.Held() != 256<<10 {
		t.Fatalf("room given back was not taken: %d held", budget.Held())
	}
	small.Release()
}

// A waiting answer takes room as soon as it is given back, not at a polling interval: over
// twenty hand-overs, the median wait from a release to the waiter's take is well under a
// millisecond's scheduling (polling every 20 ms waits 10 ms in the median).
func TestWaitingAnswersWakeWhenRoomIsGivenBack(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 1<<20)
	var delays []time.Duration
	for range 20 {
		other, _ := budget.Reserve("other", 1<<20-64<<10)
		room, ok := budget.ReserveWaiting("acct", 64<<10, 5*time.Second)
		if !ok {
			t.Fatal("a reservation with room refused")
		}
		took := make(chan time.Time, 1)
		go func() {
			if room.growTo(128 << 10) {
				took <- time.Now()
			}
			close(took)
		}()
		time.Sleep(30 * time.Millisecond) // the waiter has found no room and waits
		released := time.Now()
		other.Release()
		at, ok := <-took
		if !ok {
			t.Fatal("a waiter found no room after it was given back")
		}
		delays = append(delays, at.Sub(released))
		room.Release()
	}
	slices.Sort(delays)
	if median := delays[len(delays)/2]; median > 3*time.Millisecond {
		t.Fatalf("median wait from a release to the waiter's take: %v (all: %v)", median, delays)
	}
}

// Many answers waiting for room at once each get it as others give theirs back: none misses a
// wake-up (each would then wait out its patience), and the budget is never exceeded.
func TestManyWaitingAnswersAllGetRoom(t *testing.T) {
	const waiters = 64
	budget := NewAnswerBudget(1<<20, 1<<20)
	blocker, _ := budget.Reserve("blocker", 1<<20)
	var wg sync.WaitGroup
	var served, over atomic.Int64
	began := time.Now()
	for i := range waiters {
		room, ok := budget.ReserveWaiting(string(rune('a'+i%26)), 0, 10*time.Second)
		if !ok {
			t.Fatal("an empty reservation refused")
		}
		wg.Go(func() {
			defer room.Release()
			if !room.growTo(300 << 10) {
				return
			}
			if budget.Held() > budget.Limit() {
				over.Add(1)
			}
			served.Add(1)
			time.Sleep(time.Millisecond)
		})
	}
	time.Sleep(50 * time.Millisecond)
	blocker.Release()
	wg.Wait()
	if served.Load() != waiters || over.Load() != 0 {
		t.Fatalf("%d of %d waiters got room (%d saw the budget exceeded)", served.Load(), waiters, over.Load())
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("%d waiters, three at a time, took %v: wake-ups were missed", waiters, took)
	}
	if budget.Held() != 0 {
		t.Fatalf("%d held after all releases", budget.Held())
	}
}

// Resize sets the bounds the answers held are checked against next, and wakes the answers
// waiting when it makes room.
func TestResizeChangesTheBoundsAndWakesWaiters(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 0)
	if budget.Limit() != 1<<20 || budget.Share() != 256<<10 {
		t.Fatalf("limit %d, share %d: want 1 MiB and a quarter", budget.Limit(), budget.Share())
	}
	budget.Resize(1<<20, 1<<20)
	other, _ := budget.Reserve("b", 500<<10)
	room, _ := budget.ReserveWaiting("a", 200<<10, 5*time.Second)
	done := make(chan bool)
	go func() { done <- room.growTo(600 << 10) }()
	time.Sleep(30 * time.Millisecond)
	budget.Resize(2<<20, 1<<20)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("the waiter found no room in the larger budget")
		}
	case <-time.After(time.Second):
		t.Fatal("a resize that made room did not wake the waiter")
	}
	budget.Resize(512<<10, 0) // below what is held: nothing more is taken
	if _, ok := budget.Reserve("c", 1); ok || budget.Share() != 128<<10 || budget.Held() != 1100<<10 {
		t.Fatalf("share %d, %d held: a reservation was made past a lowered limit, or the held answers lost bytes", budget.Share(), budget.Held())
	}
	room.Release()
	other.Release()
	if budget.Held() != 0 {
		t.Fatalf("%d held after release", budget.Held())
	}
}
