package ratelimit

import (
	"testing"
	"time"
)

func TestSlidingWindow(t *testing.T) {
	clock := time.Unix(1000, 0)
	now = func() time.Time { return clock }
	defer func() { now = time.Now }()
	l := NewSlidingWindow(3, time.Minute)

	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("call %d refused", i+1)
		}
		clock = clock.Add(10 * time.Second)
	}
	// Calls at 0s, 10s, 20s; now 30s: the 4th must wait until the first leaves, at 60s.
	ok, wait := l.Allow("a")
	if ok || wait != 30*time.Second {
		t.Fatalf("4th call = %v, wait %v; want refused, 30s", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key was limited")
	}
	clock = clock.Add(29 * time.Second) // 59s: still inside the window
	if ok, wait := l.Allow("a"); ok || wait != time.Second {
		t.Fatalf("at 59s = %v, %v", ok, wait)
	}
	clock = clock.Add(time.Second) // 60s: the first call has left
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused after the window moved")
	}
	if ok, wait := l.Allow("a"); ok || wait != 10*time.Second {
		t.Fatalf("next = %v, %v; want refused until the 10s call leaves", ok, wait)
	}
	// Idle keys are forgotten.
	clock = clock.Add(5 * time.Minute)
	l.Allow("c")
	l.Allow("c")
	if _, ok := l.keys["a"]; ok {
		t.Fatal("idle key kept")
	}
}

func TestLargeLimitsAreEstimatedInConstantMemory(t *testing.T) {
	clock := time.Unix(6000, 0) // the start of a fixed minute
	now = func() time.Time { return clock }
	defer func() { now = time.Now }()
	limit := ExactUpTo * 2
	l := NewSlidingWindow(limit, time.Minute)
	for i := range limit {
		if ok, _ := l.Allow("k"); !ok {
			t.Fatalf("call %d refused", i+1)
		}
	}
	if ok, wait := l.Allow("k"); ok || wait != time.Minute {
		t.Fatalf("over the limit = %v, wait %v", ok, wait)
	}
	if h := l.keys["k"]; len(h.times) != 0 {
		t.Fatalf("estimated mode kept %d times", len(h.times))
	}
	// Half-way through the next window, half of the previous window still counts.
	clock = clock.Add(90 * time.Second)
	accepted := 0
	for range limit {
		if ok, _ := l.Allow("k"); ok {
			accepted++
		}
	}
	if accepted != limit/2 {
		t.Fatalf("accepted %d half-way into the next window, want %d", accepted, limit/2)
	}
}
