package videotask

import (
	"context"
	"net/http"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// Each upstream keeps its own pace (providers.Upstream.Take): its max_rps, and the pause its
// last 429 asked for. The watcher puts off what the upstream's pace does not allow now (paced
// below) and takes each call's share right before the call (mayRead);
// a client's poll reads the upstream only when a share is free and the upstream is not
// paused, and gets the stored answer otherwise; a client's create is never delayed but counts
// (Spend). A 429 of any read, Ark's or an adaptor's, pauses the upstream (Throttled).

// pacedKey marks a context whose upstream call the watcher already took its share for.
type pacedKey struct{}

// withPaced marks ctx as the watcher's, whose calls were paced before they were made.
func withPaced(ctx context.Context) context.Context { return context.WithValue(ctx, pacedKey{}, true) }

// isPaced reports a context marked by withPaced.
func isPaced(ctx context.Context) bool {
	paced, _ := ctx.Value(pacedKey{}).(bool)
	return paced
}

// mayRead reports whether a read of u may go out now, taking its share of u's max_rps: the
// watcher's waits for it (briefly: paced put off what would wait longer), another's only takes
// a share that is free now. Neither goes out while u is paused after a 429.
func (h *Handler) mayRead(ctx context.Context, u *providers.Upstream) bool {
	if isPaced(ctx) {
		return u.WaitShare(ctx)
	}
	return u.Allow()
}

// paced splits the batch of tasks of one upstream that the watcher is about to read into those
// it may read now, within the upstream's pace, and schedules the rest: each at the time its own
// call's share comes (the first when the upstream grants the next call, the others one
// 1/max_rps apart), so that a task put off is polled again once, not at every grant. A batch
// that one task list call reads (Ark's) takes one call's share, and is put off whole.
func (w *Watcher) paced(u *providers.Upstream, batch []storage.Task) (now []storage.Task) {
	calls := len(batch)
	listed := w.Tasks.listable(u, batch)
	if listed {
		calls = 1
	}
	// The list call takes its share here; a task read takes its own right before it goes out
	// (mayRead), so that the reads of a batch, made one after another, keep to max_rps.
	granted, at := u.Available(calls)
	if listed && granted == 1 {
		granted, at = u.Take(1)
	}
	switch {
	case granted == calls:
		return batch
	case listed:
		granted = 0 // the list call, not granted
	}
	var step time.Duration
	if u.MaxRPS > 0 && !listed {
		step = time.Duration(float64(time.Second) / u.MaxRPS)
	}
	for i, t := range batch[granted:] {
		w.reschedule(t.ID, at.Add(time.Duration(i)*step))
	}
	return batch[:granted]
}

// listable reports whether refreshBatch reads the batch through the upstream's task list (one
// call) rather than task by task.
func (h *Handler) listable(u *providers.Upstream, batch []storage.Task) bool {
	return len(batch) > 1 && batch[0].UpstreamID == "" && h.unbatched.allows(u, h.now())
}

// throttledBy records an upstream's answer: a 429 pauses u for its Retry-After (bounded, see
// providers.Upstream.Throttled), any other answer ends u's run of 429s. It reports a 429.
func (h *Handler) throttledBy(u *providers.Upstream, ans upstream.Answer) bool {
	if ans.Status != http.StatusTooManyRequests {
		u.Unthrottled()
		return false
	}
	u.Throttled(upstream.RetryAfter(ans.Header, u.Now())) // a date, by the clock the pause is measured on
	return true
}
