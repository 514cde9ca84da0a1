// Package ratelimit counts calls per key in a sliding window.
package ratelimit

import (
	"sync"
	"time"
)

// now is the clock; tests replace it.
var now = time.Now

// SlidingWindow allows at most Limit calls per key in any period of length Window. It remembers
// the time of each accepted call (a ring of Limit entries per key): a call is accepted when fewer
// than Limit calls were accepted in the Window before it. Refused calls are not counted, so a
// client that waits as told by Retry-After always gets through.
type SlidingWindow struct {
	limit  int
	window time.Duration

	mu        sync.Mutex
	keys      map[string]*ring
	lastSweep time.Time
}

type ring struct {
	times []time.Time // accepted calls, oldest at head once full
	head  int
}

// NewSlidingWindow returns a limiter of limit calls per window for each key.
func NewSlidingWindow(limit int, window time.Duration) *SlidingWindow {
	return &SlidingWindow{limit: max(limit, 1), window: window, keys: map[string]*ring{}}
}

// Limit and Window return the settings.
func (l *SlidingWindow) Limit() int            { return l.limit }
func (l *SlidingWindow) Window() time.Duration { return l.window }

// Allow records a call for key and reports whether it is within the limit. When it is not, wait
// is how long until the oldest counted call leaves the window.
func (l *SlidingWindow) Allow(key string) (ok bool, wait time.Duration) {
	t := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(t)
	r := l.keys[key]
	if r == nil {
		r = &ring{times: make([]time.Time, 0, min(l.limit, 16))}
		l.keys[key] = r
	}
	if len(r.times) < l.limit {
		r.times = append(r.times, t)
		return true, 0
	}
	oldest := r.times[r.head]
	if elapsed := t.Sub(oldest); elapsed < l.window {
		return false, l.window - elapsed
	}
	r.times[r.head] = t
	r.head = (r.head + 1) % l.limit
	return true, 0
}

// sweep forgets keys with no call in the last window, at most once per window.
func (l *SlidingWindow) sweep(t time.Time) {
	if t.Sub(l.lastSweep) < l.window {
		return
	}
	l.lastSweep = t
	for k, r := range l.keys {
		newest := r.times[(r.head+len(r.times)-1)%len(r.times)]
		if t.Sub(newest) >= l.window {
			delete(l.keys, k)
		}
	}
}
