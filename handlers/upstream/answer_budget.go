package upstream

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/metrics"
)

// DefaultAnswerMemory is the default of an AnswerBudget: 256 MiB, four answers of the image
// handler's default max_answer (64 MiB) at once.
const DefaultAnswerMemory = 256 << 20

// An AnswerBudget bounds the bytes of provider answers that the gateway holds at once, gateway
// wide: a Client with a Budget takes the bytes of its buffer from it as the answer is read
// (whatever Content-Length says), and gives them back when the caller releases the Answer (see
// Answer.Release), after passing it on. A read that finds no room left ends at once with
// ErrBusy (or ErrBusyAnswered for a successful answer), unless its hold was reserved with
// ReserveWaiting: then it waits for room, for a bounded time (two such answers may wait for each
// other until one gives up). A nil budget bounds nothing.
//
// The budget counts the buffer an answer is read into. While it grows, the old buffer and the
// new one are briefly both alive; a copy that the checks on an answer make (credential removal,
// the client's model id) takes the answer's place (Answer.Replace), and the one it replaces is
// alive until the collector comes: the memory the answers take is a small multiple of the
// bytes counted.
type AnswerBudget struct {
	limit int64
	held  atomic.Int64
}

// NewAnswerBudget returns a budget of limit bytes (DefaultAnswerMemory when limit <= 0).
func NewAnswerBudget(limit int64) *AnswerBudget {
	if limit <= 0 {
		limit = DefaultAnswerMemory
	}
	return &AnswerBudget{limit: limit}
}

// Limit is the budget's bound, in bytes.
func (b *AnswerBudget) Limit() int64 { return b.limit }

// Held is the bytes taken from the budget and not given back yet.
func (b *AnswerBudget) Held() int64 { return b.held.Load() }

// answerBytesHeld is the bytes held from every budget of the process (see HeldAnswerBytes).
var answerBytesHeld atomic.Int64

// HeldAnswerBytes is the bytes of answers held now from all the process's budgets: those of the
// loaded config and, during a reload, the old config's, until its answers are passed on (the
// gauge mediagw_answer_memory_bytes).
func HeldAnswerBytes() int64 { return answerBytesHeld.Load() }

// take takes n bytes if there is room for them.
func (b *AnswerBudget) take(n int64) bool {
	for {
		held := b.held.Load()
		if held+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(held, held+n) {
			answerBytesHeld.Add(n)
			metrics.AnswerMemory(n)
			return true
		}
	}
}

func (b *AnswerBudget) give(n int64) {
	b.held.Add(-n)
	answerBytesHeld.Add(-n)
	metrics.AnswerMemory(-n)
}

// Reserve takes n bytes for an answer to come, before its call is made (so that a request finds
// the gateway busy before anything is sent or charged, rather than after). A Client whose Hold
// is the reservation reads into it first, and takes more only past it. It reports false, and
// holds nothing, when there is no room; a nil budget reserves nothing and reports true.
func (b *AnswerBudget) Reserve(n int64) (*AnswerHold, bool) {
	if b == nil {
		return nil, true
	}
	h := &AnswerHold{budget: b}
	if n > 0 && !h.growTo(n) {
		return nil, false
	}
	return h, true
}

// An AnswerHold is the part of an AnswerBudget that one answer holds. Release gives it back,
// once however many times it is called; a nil hold holds nothing.
type AnswerHold struct {
	budget *AnswerBudget
	mu     sync.Mutex
	n      int64
	done   bool

	// patience is how long, in all, the hold's answer may wait for room (see ReserveWaiting);
	// waited is how long it has.
	patience, waited time.Duration
}

// roomPoll is how often an answer that waits for room looks for it.
const roomPoll = 20 * time.Millisecond

// ReserveWaiting is Reserve for an answer that must not be lost for want of room once it comes
// (an edit's: the provider made the images, and bills them): reading it may wait for room, up
// to patience in all, where another answer would be ErrBusy at once. The reservation itself
// never waits. Two such answers may wait for each other's room: each gives up after patience.
func (b *AnswerBudget) ReserveWaiting(n int64, patience time.Duration) (*AnswerHold, bool) {
	h, ok := b.Reserve(n)
	if h != nil {
		h.patience = patience
	}
	return h, ok
}

// growTo takes what it lacks for the hold to be at least n bytes, if the budget has room.
func (h *AnswerHold) growTo(n int64) bool {
	return h.takeMore(func(held int64) int64 { return max(n-held, 0) })
}

// add takes n bytes more for the hold, if the budget has room.
func (h *AnswerHold) add(n int64) bool {
	return h.takeMore(func(int64) int64 { return n })
}

// takeMore takes more(bytes held) bytes more for the hold, if the budget has room; a released
// hold takes nothing more (its answer is no longer read).
func (h *AnswerHold) takeMore(more func(held int64) int64) bool {
	if h == nil {
		return true
	}
	for {
		taken, done := h.tryMore(more)
		if taken || done || h.waited >= h.patience {
			return taken
		}
		time.Sleep(roomPoll)
		h.waited += roomPoll
	}
}

// tryMore is one attempt of takeMore; done is a released hold.
func (h *AnswerHold) tryMore(more func(held int64) int64) (taken, done bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false, true
	}
	n := more(h.n)
	if n > 0 && !h.budget.take(n) {
		return false, false
	}
	h.n += n
	return true, false
}

// Release gives the hold's bytes back to its budget.
func (h *AnswerHold) Release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.done = true
		h.budget.give(h.n)
		h.n = 0
	}
}

// busyRetry is the Retry-After of ErrBusy: answers are passed on in seconds.
const busyRetry = time.Second

var (
	// ErrBusy is a provider answer the gateway had no room to hold (see AnswerBudget), or a
	// request refused before its call for the same reason: 503 with Retry-After.
	ErrBusy = apierror.New(http.StatusServiceUnavailable, "gateway_busy",
		"the gateway is holding as many provider answers as it may at once; retry shortly").WithRetryAfter(busyRetry)
	// ErrBusyAnswered is ErrBusy for a successful answer (2xx): the provider did the work (made
	// the images) although the gateway could not hold its answer.
	ErrBusyAnswered = apierror.New(http.StatusServiceUnavailable, "gateway_busy",
		"the gateway is holding as many provider answers as it may at once and could not read the provider's answer; retry shortly").WithRetryAfter(busyRetry)
)
