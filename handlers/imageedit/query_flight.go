package imageedit

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// Concurrent queries of one image task share one provider call and one answer in memory: a
// succeeded task's answer can carry its images as b64_json, tens of MB, and a query is not
// charged, so that clients polling one task in parallel must not make the gateway hold one copy
// per query. Each query checks its caller's ownership of the task before it joins (see query).
// The call runs on a context of its own, bounded by the provider client's timeout, and ended
// early only when every query waiting for it has left; a query whose client leaves stops
// waiting at once. The shared answer is read-only: every query writes the same bytes. Its bytes
// are given back to the answer budget (upstream.AnswerBudget) when the last query that got it
// has written it. A query that arrives after the call ended makes a call of its own: answers
// are shared, never kept. The calls in flight are the process's (taskQueries), not a Handler's:
// during a reload the old config's queries and the new config's share one call, as they share
// the store and the answer budget.

// taskQuery is one provider call for the queries of a task, and what it answered.
type taskQuery struct {
	done   chan struct{} // closed once the fields below are set
	cancel context.CancelFunc

	// Guarded by queryFlights.mu.
	waiters int  // queries that joined and have not left
	ended   bool // the call returned

	// Set before done is closed; read-only after.
	ans     upstream.Answer // its Body as every query writes it (see query)
	err     error
	latency time.Duration // what the call noted for each query's usage entry
	tokens  usage.Tokens
}

// queryFlights are the calls in flight, by task (see queryKey).
type queryFlights struct {
	mu    sync.Mutex
	calls map[string]*taskQuery
}

// taskQueries are the process's calls in flight, for every Handler: the old and the new config's
// during a reload make one call for one task, not one each.
var taskQueries queryFlights

// queryKey names a task's call in taskQueries: its id in its store (the one store that every
// config of a gateway shares; two gateways of one process, with stores of their own, share no
// call).
func queryKey(store storage.Store, taskID string) string {
	return fmt.Sprintf("%p/%s", store, taskID)
}

// join returns the call in flight for key, or starts one that runs do on a context that
// carries ctx's values but not its end, nor its usage entry: each query notes the call on its
// own what the call's entry (the first query's endpoint, for the upstream's metrics) noted.
// Every join is paired with one leave.
func (f *queryFlights) join(ctx context.Context, key string, do func(context.Context) (upstream.Answer, error)) *taskQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.calls[key]; ok {
		q.waiters++
		return q
	}
	if f.calls == nil {
		f.calls = map[string]*taskQuery{}
	}
	entry := usage.NewEntry(upstream.BackgroundEndpoint)
	if e := usage.From(ctx); e != nil {
		entry.Endpoint = e.Endpoint
	}
	callCtx, cancel := context.WithCancel(usage.WithEntry(context.WithoutCancel(ctx), entry))
	q := &taskQuery{done: make(chan struct{}), cancel: cancel, waiters: 1}
	f.calls[key] = q
	go func() {
		ans, err := guarded(callCtx, do)
		q.ans, q.err = ans, err
		q.latency, q.tokens = entry.Upstream()
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.calls[key] == q {
			delete(f.calls, key)
		}
		q.ended = true
		if q.waiters == 0 {
			q.ans.Release() // everyone left before the answer: nobody writes it
		}
		close(q.done)
	}()
	return q
}

// leave ends a query's part in q: once the last one has left, the answer's bytes go back to the
// budget, or, while the call still runs, the call is cancelled (and no later query joins it).
func (f *queryFlights) leave(key string, q *taskQuery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q.waiters--
	if q.waiters > 0 {
		return
	}
	if q.ended {
		q.ans.Release()
		return
	}
	if f.calls[key] == q {
		delete(f.calls, key)
	}
	q.cancel()
}

// guarded runs do, turning a panic into an error: the call runs on a goroutine of its own, where
// no server recovers it, and the queries waiting for it must get an answer (500).
func guarded(ctx context.Context, do func(context.Context) (upstream.Answer, error)) (ans upstream.Answer, err error) {
	defer func() {
		if p := recover(); p != nil {
			ans, err = upstream.Answer{}, fmt.Errorf("image task query: panic: %v\n%s", p, debug.Stack())
		}
	}()
	return do(ctx)
}
