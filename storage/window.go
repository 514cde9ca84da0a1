package storage

import (
	"sync"
	"time"
)

// exactWindowUpTo is the largest limit a rateWindows counts exactly. Above it a window's memory
// would grow with the limit, so it is estimated from two fixed windows instead.
const exactWindowUpTo = 10_000

// rateWindows are sliding windows kept in memory, by name (the embedded backend's AllowRate).
//
// Up to exactWindowUpTo events per window a window is exact: it remembers the time of each
// counted event (a ring of limit entries), and an event is counted when fewer than limit were
// counted in the window before it. Above that it keeps the counts of the current and the
// previous fixed window and weighs the previous one by how much of it the sliding window still
// covers. Refused events are never counted.
type rateWindows struct {
	mu        sync.Mutex
	windows   map[string]*rateWindow
	lastSweep int64
}

type rateWindow struct {
	limit  int
	window time.Duration
	// exact: counted events (Unix nanoseconds), oldest at head once full
	times []int64
	head  int
	// estimated: counts of the fixed window that starts at start, and of the one before
	start     int64
	cur, prev int
	last      int64
}

func (r *rateWindows) allow(name string, limit int, window time.Duration, now time.Time) (bool, time.Duration) {
	limit, t := max(limit, 1), now.UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(t)
	w := r.windows[name]
	if w == nil || w.limit != limit || w.window != window {
		if r.windows == nil {
			r.windows = map[string]*rateWindow{}
		}
		w = &rateWindow{limit: limit, window: window}
		r.windows[name] = w
	}
	if limit > exactWindowUpTo {
		return w.estimate(t)
	}
	if len(w.times) < limit {
		w.times = append(w.times, t)
		w.last = t
		return true, 0
	}
	if elapsed := time.Duration(t - w.times[w.head]); elapsed < window {
		return false, window - elapsed
	}
	w.times[w.head] = t
	w.head = (w.head + 1) % limit
	w.last = t
	return true, 0
}

func (w *rateWindow) estimate(t int64) (bool, time.Duration) {
	size := int64(w.window)
	start := t - t%size
	switch start {
	case w.start:
	case w.start + size:
		w.prev, w.cur, w.start = w.cur, 0, start
	default:
		w.prev, w.cur, w.start = 0, 0, start
	}
	overlap := float64(size-(t-start)) / float64(size)
	if float64(w.prev)*overlap+float64(w.cur) >= float64(w.limit) {
		return false, time.Duration(start + size - t)
	}
	w.cur++
	w.last = t
	return true, 0
}

// sweep forgets windows with no counted event in the last two of their lengths, at most once a
// minute.
func (r *rateWindows) sweep(t int64) {
	if time.Duration(t-r.lastSweep) < time.Minute {
		return
	}
	r.lastSweep = t
	for name, w := range r.windows {
		if time.Duration(t-w.last) >= 2*w.window {
			delete(r.windows, name)
		}
	}
}
