package upstream

import (
	"net/http"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/metrics"
)

// DefaultAnswerMemory is the default of an AnswerBudget: 256 MiB, four answers of the image
// handler's default max_answer (64 MiB) at once.
const DefaultAnswerMemory = 256 << 20

// DefaultAnswerShareParts is how many accounts' shares a budget holds by default: an account's
// share is a quarter of the budget (64 MiB of the default 256 MiB, one answer of the default
// max_answer).
const DefaultAnswerShareParts = 4

// An AnswerBudget bounds the bytes of provider answers that the gateway holds at once, gateway
// wide: a Client with a Budget takes the bytes of its buffer from it as the answer is read
// (whatever Content-Length says), and gives them back when the caller releases the Answer (see
// Answer.Release), after passing it on. A read that finds no room left ends at once with
// ErrBusy (or ErrBusyAnswered for a successful answer), unless its hold was reserved with
// ReserveWaiting: then it waits for room, for a bounded time, woken as soon as bytes are given
// back. A nil budget bounds nothing.
//
// Every answer is an account's, and an account may hold at most its share of the budget: an
// answer that would take its account past its share is refused (or waits, with ReserveWaiting,
// for the account's own answers to be given back). The share must hold one whole answer (the
// gateway refuses a config whose share is below a handler's max_answer), so an answer alone
// always fits its account's share, no account ever holds room past it, and one account reading
// its answers slowly never keeps another account, within its share, out of more than the room
// the shares leave.
//
// The budget counts the bytes of an answer read (see readAnswer), not the buffer it is read into,
// which, for an answer of no declared length (a compressed one), may be up to twice as long;
// while it grows, the old buffer and the new one are briefly both alive; a copy that the checks on an answer make (credential removal,
// the client's model id) takes the answer's place (Answer.Replace), and the one it replaces is
// alive until the collector comes: the memory the answers take is a small multiple of the
// bytes counted.
type AnswerBudget struct {
	mu       sync.Mutex
	limit    int64
	share    int64
	held     int64
	sized    uint64 // how many times the bounds were set (see Resize)
	accounts map[string]*accountAnswers
	// room is closed when room may have come (bytes given back, the bounds raised), then
	// replaced: every answer waiting for room waits on the one it saw when it found none.
	room chan struct{}
}

// accountAnswers is what one account holds of a budget.
type accountAnswers struct {
	n     int64
	holds map[*AnswerHold]struct{}
}

// NewAnswerBudget returns a budget of limit bytes (DefaultAnswerMemory when limit <= 0) of which
// an account may hold share (limit/DefaultAnswerShareParts when share <= 0, at most limit).
func NewAnswerBudget(limit, share int64) *AnswerBudget {
	b := &AnswerBudget{accounts: map[string]*accountAnswers{}, room: make(chan struct{})}
	b.Resize(limit, share)
	return b
}

// Resize sets the budget's bounds as NewAnswerBudget does. The answers held keep what they hold;
// past a lowered bound, answers take nothing more until enough is given back. Undo puts back the
// bounds it replaced, if no Resize came since (a config that started, setting its bounds, and is
// stopped because the rest of its load failed gives the running config its bounds back).
func (b *AnswerBudget) Resize(limit, share int64) (undo func()) {
	if limit <= 0 {
		limit = DefaultAnswerMemory
	}
	if share <= 0 {
		share = limit / DefaultAnswerShareParts
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	prevLimit, prevShare := b.limit, b.share
	b.setBounds(limit, min(share, limit))
	mine := b.sized
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.sized == mine && prevLimit > 0 {
			b.setBounds(prevLimit, prevShare)
		}
	}
}

// setBounds sets the bounds and wakes the answers waiting for room. b.mu is held.
func (b *AnswerBudget) setBounds(limit, share int64) {
	b.limit, b.share = limit, share
	b.sized++
	b.wake()
}

// Limit is the budget's bound, in bytes.
func (b *AnswerBudget) Limit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// Share is the most that one account's answers may hold, in bytes (see AnswerBudget).
func (b *AnswerBudget) Share() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.share
}

// Held is the bytes taken from the budget and not given back yet.
func (b *AnswerBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Reserve takes n bytes for an answer of account to come, before its call is made (so that a
// request finds the gateway busy before anything is sent or charged, rather than after). A
// Client whose Hold is the reservation reads into it first, and takes more only past it. It
// reports false, and holds nothing, when there is no room, or the account is past its share; a
// nil budget reserves nothing and reports true.
func (b *AnswerBudget) Reserve(account string, n int64) (*AnswerHold, bool) {
	if b == nil {
		return nil, true
	}
	h := b.hold(account)
	if n > 0 && !h.growTo(n) {
		return nil, false
	}
	return h, true
}

// ReserveWaiting is Reserve for an answer that must not be lost for want of room once it comes
// (an edit's: the provider made the images, and bills them): reading it may wait for room, up
// to patience in all, where another answer would be ErrBusy at once. The reservation itself
// never waits.
func (b *AnswerBudget) ReserveWaiting(account string, n int64, patience time.Duration) (*AnswerHold, bool) {
	h, ok := b.Reserve(account, n)
	if h != nil {
		h.patience = patience
	}
	return h, ok
}

// hold is a new hold of account's that holds nothing yet.
func (b *AnswerBudget) hold(account string) *AnswerHold {
	return &AnswerHold{budget: b, account: account}
}

// A shortfall is why a hold could not take more.
type shortfall int

const (
	enough    shortfall = iota
	noRoom              // the budget is full of answers, the account within its share
	pastShare           // the account would pass its share
)

// take takes n more bytes for h, if the rule of the budget (see AnswerBudget) allows it. b.mu is
// held.
func (b *AnswerBudget) take(h *AnswerHold, n int64) shortfall {
	acct := b.accounts[h.account]
	var mine int64
	if acct != nil {
		mine = acct.n
	}
	if mine+n > b.share {
		return pastShare
	}
	if b.held+n > b.limit {
		return noRoom
	}
	if acct == nil {
		acct = &accountAnswers{holds: map[*AnswerHold]struct{}{}}
		b.accounts[h.account] = acct
	}
	acct.n += n
	acct.holds[h] = struct{}{}
	h.n += n
	b.held += n
	metrics.AnswerMemory(n)
	return enough
}

// give gives back what h holds. b.mu is held.
func (b *AnswerBudget) give(h *AnswerHold) {
	if acct := b.accounts[h.account]; acct != nil {
		acct.n -= h.n
		delete(acct.holds, h)
		if len(acct.holds) == 0 {
			delete(b.accounts, h.account)
		}
	}
	b.held -= h.n
	metrics.AnswerMemory(-h.n)
	h.n = 0
	b.wake()
}

// wake wakes every answer waiting for room. b.mu is held.
func (b *AnswerBudget) wake() {
	close(b.room)
	b.room = make(chan struct{})
}

// An AnswerHold is the part of an AnswerBudget that one answer of one account holds. Release
// gives it back, once however many times it is called; a nil hold holds nothing.
type AnswerHold struct {
	budget  *AnswerBudget
	account string

	// Guarded by budget.mu.
	n     int64
	done  bool
	short shortfall // why the last take failed

	// patience is how long, in all, the hold's answer may wait for room (see ReserveWaiting);
	// waited is how long it has. Used by the one goroutine that reads the answer.
	patience, waited time.Duration
}

// pastShare reports whether the hold's last take failed because its account is past its share,
// not for want of room within it.
func (h *AnswerHold) pastShare() bool {
	if h == nil {
		return false
	}
	h.budget.mu.Lock()
	defer h.budget.mu.Unlock()
	return h.short == pastShare
}

// growTo takes what it lacks for the hold to be at least n bytes, if the budget has room.
func (h *AnswerHold) growTo(n int64) bool {
	return h.takeMore(func(held int64) int64 { return max(n-held, 0) })
}

// add takes n bytes more for the hold, if the budget has room.
func (h *AnswerHold) add(n int64) bool {
	return h.takeMore(func(int64) int64 { return n })
}

// size is the bytes the hold holds.
func (h *AnswerHold) size() int64 {
	if h == nil {
		return 0
	}
	h.budget.mu.Lock()
	defer h.budget.mu.Unlock()
	return h.n
}

// shrinkTo gives back what the hold holds past n bytes (the slack of a buffer read into).
func (h *AnswerHold) shrinkTo(n int64) {
	if h == nil {
		return
	}
	b := h.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.done || h.n <= n {
		return
	}
	extra := h.n - n
	if acct := b.accounts[h.account]; acct != nil {
		acct.n -= extra
	}
	h.n = n
	b.held -= extra
	metrics.AnswerMemory(-extra)
	b.wake()
}

// takeMore takes more(bytes held) bytes more for the hold, if the budget allows it, waiting for
// room given back while the hold's patience lasts; a released hold takes nothing more (its
// answer is no longer read).
func (h *AnswerHold) takeMore(more func(held int64) int64) bool {
	if h == nil {
		return true
	}
	var timer *time.Timer
	for {
		taken, room := h.tryMore(more)
		if taken || room == nil || h.waited >= h.patience {
			if timer != nil {
				timer.Stop()
			}
			return taken
		}
		left := h.patience - h.waited
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		began := time.Now()
		select {
		case <-room:
		case <-timer.C:
		}
		h.waited += time.Since(began)
	}
}

// tryMore is one attempt of takeMore. When it takes nothing, room is the channel closed when
// room may have come, or nil when none will: a released hold's answer is no longer read, and one
// bigger than the share never fits it.
func (h *AnswerHold) tryMore(more func(held int64) int64) (taken bool, room <-chan struct{}) {
	b := h.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.done {
		return false, nil
	}
	n := more(h.n)
	if n <= 0 {
		return true, nil
	}
	if h.short = b.take(h, n); h.short == enough {
		return true, nil
	}
	if h.n+n > b.share {
		return false, nil // past the share on its own: no answer given back makes room for it
	}
	return false, b.room
}

// Release gives the hold's bytes back to its budget.
func (h *AnswerHold) Release() {
	if h == nil {
		return
	}
	h.budget.mu.Lock()
	defer h.budget.mu.Unlock()
	if !h.done {
		h.done = true
		h.budget.give(h)
	}
}

// busyRetry is the Retry-After of ErrBusy: answers are passed on in seconds.
const busyRetry = time.Second

var (
	// ErrBusy is a provider answer the gateway had no room to hold (see AnswerBudget), or a
	// request refused before its call for the same reason: 503 with Retry-After.
	ErrBusy = apierror.New(http.StatusServiceUnavailable, "gateway_busy",
		"the gateway is holding as many provider answers as it may at once; retry shortly").WithRetryAfter(busyRetry)
	// ErrBusyAnswered is ErrBusy for a successful answer (2xx) that was within its account's
	// share: the provider did the work (made the images) although the gateway, full of other
	// accounts' answers, could not hold its answer.
	ErrBusyAnswered = apierror.New(http.StatusServiceUnavailable, "gateway_busy",
		"the gateway is holding as many provider answers as it may at once and could not read the provider's answer; retry shortly").WithRetryAfter(busyRetry)
	// ErrPastShareAnswered is a successful answer (2xx) not held because its account's answers
	// would pass the account's share of the budget: the provider did the work.
	ErrPastShareAnswered = apierror.New(http.StatusBadGateway, "invalid_response",
		"the provider answered, but the answer did not fit this account's share of the gateway's answer memory")
)
