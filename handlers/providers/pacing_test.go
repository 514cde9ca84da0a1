package providers

import (
	"context"
	"testing"
	"time"
)

// TestUpstreamTake: max_rps 50 grants a tenth of a second's worth at once (5), then one call
// every 20ms, saying when the next is free; creates (Spend) push the next grant back; without
// max_rps everything is granted.
func TestUpstreamTake(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	board := &Board{Now: func() time.Time { return now }, states: map[string]*healthState{}}
	u := &Upstream{Name: "a", MaxRPS: 50, health: board}
	if got, _ := u.Take(8); got != 5 {
		t.Fatalf("first take granted %d, want the burst of 5", got)
	}
	got, retry := u.Take(3)
	if got != 0 || retry.Sub(now) != 20*time.Millisecond {
		t.Fatalf("take at the limit: %d, retry in %v", got, retry.Sub(now))
	}
	now = now.Add(time.Second)
	if got, _ := u.Take(100); got != 5 {
		t.Fatalf("a second later granted %d, want the burst of 5", got)
	}
	u.Spend()
	u.Spend()
	now = now.Add(40 * time.Millisecond) // two calls' worth, spent by the creates
	if got, retry := u.Take(1); got != 0 || retry.Sub(now) != 20*time.Millisecond {
		t.Fatalf("after two creates: %d, retry in %v", got, retry.Sub(now))
	}
	u.Spend()
	u.Spend() // a debt of two calls
	if got, retry := u.Take(4); got != 0 || retry.Sub(now) != 60*time.Millisecond {
		t.Fatalf("in debt: %d, retry in %v", got, retry.Sub(now))
	}
	slow := &Upstream{Name: "s", MaxRPS: 0.5, health: board}
	if got, _ := slow.Take(3); got != 1 {
		t.Fatalf("max_rps 0.5 granted %d at once, want 1", got)
	}
	if _, retry := slow.Take(1); retry.Sub(now) != 2*time.Second {
		t.Fatalf("max_rps 0.5: next call in %v", retry.Sub(now))
	}

	free := &Upstream{Name: "b", health: board}
	if got, _ := free.Take(1000); got != 1000 || !free.Allow() {
		t.Fatalf("an upstream without max_rps granted %d", got)
	}
}

// TestUpstreamThrottled: a 429 pauses the upstream for its Retry-After within [1s, 1min];
// without one, for 1s doubling with each 429 in a row, until an answer that is not a 429.
func TestUpstreamThrottled(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	board := &Board{Now: func() time.Time { return now }, states: map[string]*healthState{}}
	u := &Upstream{Name: "a", health: board}
	if until := u.Throttled(3 * time.Second); until.Sub(now) != 3*time.Second {
		t.Fatalf("Retry-After 3s paused for %v", until.Sub(now))
	}
	if got, retry := u.Take(1); got != 0 || !retry.Equal(now.Add(3*time.Second)) || u.Allow() {
		t.Fatalf("paused upstream granted %d, retry %v", got, retry)
	}
	now = now.Add(3 * time.Second)
	if !u.Allow() {
		t.Fatal("the pause did not end")
	}
	if until := u.Throttled(time.Hour); until.Sub(now) != MaxThrottlePause {
		t.Fatalf("Retry-After 1h paused for %v", until.Sub(now))
	}
	now = now.Add(MaxThrottlePause)
	u.Unthrottled()
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if until := u.Throttled(0); until.Sub(now) != want {
			t.Fatalf("429 #%d without Retry-After paused for %v, want %v", i+1, until.Sub(now), want)
		}
		now = now.Add(want)
	}
	u.Unthrottled()
	if until := u.Throttled(0); until.Sub(now) != time.Second {
		t.Fatalf("after a success: %v", until.Sub(now))
	}
}

// TestUpstreamWaitShare: a share free now is taken at once; one further off than MaxShareWait,
// or any while the upstream is paused, is refused without taking anything; Available takes
// nothing.
func TestUpstreamWaitShare(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	board := &Board{Now: func() time.Time { return now }, states: map[string]*healthState{}}
	u := &Upstream{Name: "a", MaxRPS: 0.5, health: board}
	if n, _ := u.Available(3); n != 1 {
		t.Fatalf("available %d, want 1", n)
	}
	if !u.WaitShare(context.Background()) {
		t.Fatal("a free share was refused")
	}
	if u.WaitShare(context.Background()) {
		t.Fatal("a share 2s off was taken")
	}
	now = now.Add(2 * time.Second)
	if n, _ := u.Available(1); n != 1 {
		t.Fatal("the refused wait took a share")
	}
	u.Throttled(time.Second)
	if u.WaitShare(context.Background()) {
		t.Fatal("a share was taken while paused")
	}
}

// TestContentShareIsAPartOfMaxRPS: content reads asking for a share every 10 ms for 10 s, beside
// the watcher's reads asking as often, take at most a quarter of max_rps (and their burst of
// two); the watcher takes the rest, and the two together keep to max_rps. A content read finds
// its share among the watcher's; one whose share is further off than it may wait is told when to
// ask again, and takes nothing.
func TestContentShareIsAPartOfMaxRPS(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	board := &Board{Now: func() time.Time { return now }, states: map[string]*healthState{}}
	u := &Upstream{Name: "a", MaxRPS: 8, health: board}
	content, watcher := 0, 0
	for range 1000 {
		if ok, _ := u.WaitContentShare(context.Background(), 0); ok {
			content++
		}
		if u.Allow() {
			watcher++
		}
		now = now.Add(10 * time.Millisecond)
	}
	if content > 2+10*8/ContentPart || content < 10*8/ContentPart {
		t.Fatalf("content reads took %d shares in 10 s at max_rps 8; want about a quarter, 20", content)
	}
	if watcher < 10*8-content-4 || content+watcher > 10*8+2 {
		t.Fatalf("the watcher took %d shares beside content's %d in 10 s at max_rps 8", watcher, content)
	}
	ok, retry := u.WaitContentShare(context.Background(), 0)
	if ok || !retry.After(now) {
		t.Fatalf("a content share at once after the content part was spent: %v, retry in %v", ok, retry.Sub(now))
	}
	u.Throttled(5 * time.Second)
	if ok, retry := u.WaitContentShare(context.Background(), time.Minute); ok || retry.Sub(now) != 5*time.Second {
		t.Fatalf("a content share while paused after a 429: %v, retry in %v; want the pause's end, 5s", ok, retry.Sub(now))
	}
	free := &Upstream{Name: "b", health: board}
	if ok, _ := free.WaitContentShare(context.Background(), 0); !ok {
		t.Fatal("an upstream without max_rps refused a content share")
	}
}

// TestContentReadsUseTheRateLeftUnused: at max_rps 8 with no other read waiting for a share,
// content reads take the whole of max_rps (about 8 a second, not a quarter); once the watcher
// is refused shares, they keep to their quarter until its reads have had theirs.
func TestContentReadsUseTheRateLeftUnused(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	board := &Board{Now: func() time.Time { return now }, states: map[string]*healthState{}}
	u := &Upstream{Name: "a", MaxRPS: 8, health: board}
	second := func() (content int) {
		for range 100 {
			if ok, _ := u.WaitContentShare(context.Background(), 0); ok {
				content++
			}
			now = now.Add(10 * time.Millisecond)
		}
		return content
	}
	if n := second(); n < 7 {
		t.Fatalf("content reads of an otherwise idle upstream took %d shares in 1 s at max_rps 8; want about 8", n)
	}
	if granted, _ := u.Take(8); granted == 8 {
		t.Fatal("the watcher had 8 calls at once beside the content reads")
	}
	if n := second(); n > 2+8/ContentPart {
		t.Fatalf("content reads took %d shares in 1 s at max_rps 8 while the watcher waited for its own; want a quarter and a burst of 2 at most", n)
	}
}
