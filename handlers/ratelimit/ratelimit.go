// Package ratelimit counts calls per key in a sliding window.
package ratelimit

import (
	"sync"
	"time"
)

// now is the clock; tests replace it.
var now = time.Now

// ExactUpTo is the largest limit counted exactly. Above it a key's memory would grow with the
// limit, so the window is estimated instead from two fixed windows (see SlidingWindow).
const ExactUpTo = 10_000

// SlidingWindow allows at most Limit calls per key in any period of length Window.
//
// Up to ExactUpTo calls per window it is exact: it remembers the time of each accepted call (a
// ring of Limit entries per key), and a call is accepted when fewer than Limit calls were accepted
// in the Window before it. Above that it keeps two counters per key, for the current and the
// previous fixed window, and weighs the previous one by how much of it still overlaps the sliding
// window. Refused calls are never counted, so a client that waits as told by Retry-After gets
// through.
type SlidingWindow struct {
	limit  int
	window time.Duration

	mu        sync.Mutex
	keys      map[string]*history
	lastSweep time.Time
}

type history struct {
	// exact mode: accepted calls (Unix nanoseconds), oldest at head once full
	times []int64
	head  int
	// estimated mode: counts of the fixed window that starts at start, and of the one before
	start       int64
	cur, prev   int
	lastAllowed int64
}

// NewSlidingWindow returns a limiter of limit calls per window for each key.
func NewSlidingWindow(limit int, window time.Duration) *SlidingWindow {
	return &SlidingWindow{limit: max(limit, 1), window: window, keys: map[string]*history{}}
}

// Limit and Window return the settings.
func (l *SlidingWindow) Limit() int            { return l.limit }
func (l *SlidingWindow) Window() time.Duration { return l.window }

// Allow records a call for key and reports whether it is within the limit. When it is not, wait
// is how long until a call may succeed.
func (l *SlidingWindow) Allow(key string) (ok bool, wait time.Duration) {
	t := now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(t)
	h := l.keys[key]
	if h == nil {
		h = &history{}
		l.keys[key] = h
	}
	if l.limit > ExactUpTo {
		return l.estimate(h, t)
	}
	if len(h.times) < l.limit {
		h.times = append(h.times, t)
		h.lastAllowed = t
		return true, 0
	}
	oldest := h.times[h.head]
	if elapsed := time.Duration(t - oldest); elapsed < l.window {
		return false, l.window - elapsed
	}
	h.times[h.head] = t
	h.head = (h.head + 1) % l.limit
	h.lastAllowed = t
	return true, 0
}

// estimate applies the two-window approximation.
func (l *SlidingWindow) estimate(h *history, t int64) (bool, time.Duration) {
	w := int64(l.window)
	start := t - t%w
	switch {
	case start == h.start:
	case start == h.start+w:
		h.prev, h.cur, h.start = h.cur, 0, start
	default:
		h.prev, h.cur, h.start = 0, 0, start
	}
	overlap := float64(w-(t-start)) / float64(w)
	if float64(h.prev)*overlap+float64(h.cur) >= float64(l.limit) {
		return false, time.Duration(start + w - t)
	}
	h.cur++
	h.lastAllowed = t
	return true, 0
}

// sweep forgets keys with no accepted call in the last two windows (the estimate still weighs
// the previous window), at most once per window.
func (l *SlidingWindow) sweep(t int64) {
	if time.Duration(t-l.lastSweep.UnixNano()) < l.window {
		return
	}
	l.lastSweep = time.Unix(0, t)
	for k, h := range l.keys {
		if time.Duration(t-h.lastAllowed) >= 2*l.window {
			delete(l.keys, k)
		}
	}
}
