package providers

import (
	"slices"
	"sync"
	"time"
)

// Cooldown bounds. The n-th failure in a row cools an upstream down for BaseCooldown × 2^(n-1),
// at most MaxCooldown, or for the upstream's Retry-After when that is longer (at most
// MaxRetryAfter: a longer Retry-After is honoured for MaxRetryAfter only).
const (
	BaseCooldown  = time.Second
	MaxCooldown   = 2 * time.Minute
	MaxRetryAfter = 2 * time.Minute
	recentKept    = 8
)

// Health measures the upstream, not one caller. A failure can be the request's own doing (a body
// that makes the provider fail, a 429 for one tenant's flood), and a failed pass-through request
// costs its account nothing, so one account's failures must not take an upstream away from the
// others:
//
//   - A failure backs off the account that drew it: that account's requests leave the upstream
//     out (BaseCooldown × 2^(n-1) for its n-th failure in a row there, or its Retry-After, each at
//     most as above), and a success of that account ends its run.
//   - The upstream cools down for every account only when its failures since the last success
//     of anyone, within FailureWindow, come from at least CoolingAccounts distinct accounts (a
//     real outage fails everyone). Then the n-th such failure cools it as above.
//
// A gateway with one active account still fails over at once: that account's own backoff leaves
// the failing upstream out of its requests.
const (
	CoolingAccounts = 2
	FailureWindow   = time.Minute
	// maxBackoffs bounds the accounts whose backoff one upstream keeps; past it, ended ones are
	// forgotten first.
	maxBackoffs = 4096
)

// Board keeps the health of upstreams: the run of failures of each, when its cooldown ends, and
// the backoff of each account whose requests failed there (see Health above). It is this
// process's view; every gateway instance keeps its own. One Board is shared by every config
// generation, so a reload keeps what was learnt.
type Board struct {
	// Now is the clock. Default: time.Now.
	Now func() time.Time

	mu     sync.Mutex
	states map[string]*healthState
}

// healthState is the record of one upstream.
type healthState struct {
	failures  int       // the failures that cooled it down for all, in a row
	until     time.Time // the end of its cooldown for all
	runLength int       // the failures since the last success, of every account
	// run holds the latest failure since the last success of each of the last CoolingAccounts
	// distinct accounts that failed, so it stays small whatever the rate of failures.
	run         []accountFailure
	backoffs    map[string]*backoff
	recent      []Failure
	lastSuccess time.Time
}

// accountFailure is one failure since the upstream's last success: when, and whose request.
type accountFailure struct {
	at      time.Time
	account string
}

// backoff is one account's run of failures at an upstream, and when its backoff ends.
type backoff struct {
	failures int
	until    time.Time
}

// Failure is one recorded failure of an upstream.
type Failure struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// UpstreamState is what the admin API shows of an upstream.
type UpstreamState struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
	// Address is the upstream's scheme://host (never its credential).
	Address  string `json:"address"`
	Weight   int    `json:"weight"`
	Priority int    `json:"priority"`
	// Healthy is false while the upstream cools down, until CoolingUntil.
	Healthy      bool       `json:"healthy"`
	CoolingUntil *time.Time `json:"cooling_until,omitempty"`
	// Failures is the current run of failures (since the last success), of every account;
	// Recent the last few failures, oldest first.
	Failures int `json:"failures"`
	// AccountsBackingOff counts the accounts whose own failures keep their requests away from
	// the upstream for now, while it may serve the others.
	AccountsBackingOff int        `json:"accounts_backing_off"`
	Recent             []Failure  `json:"recent_failures"`
	LastSuccess        *time.Time `json:"last_success,omitempty"`
}

// NewBoard returns an empty board.
func NewBoard() *Board { return &Board{Now: time.Now, states: map[string]*healthState{}} }

func (b *Board) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// state returns u's record, made when it has none. b.mu must be held.
func (b *Board) state(u *Upstream) *healthState {
	if s := b.lookup(u); s != nil {
		return s
	}
	if b.states == nil {
		b.states = map[string]*healthState{}
	}
	s := &healthState{}
	b.states[u.healthKey()] = s
	u.state, u.stateBoard = s, b
	return s
}

// lookup returns u's record, or nil when it has none. The record is remembered in u, so that
// the request path looks it up by name only once (records are never removed). b.mu must be held.
func (b *Board) lookup(u *Upstream) *healthState {
	if u.stateBoard == b {
		return u.state
	}
	s := b.states[u.healthKey()]
	if s != nil {
		u.state, u.stateBoard = s, b
	}
	return s
}

// cooldown is the pause after the n-th failure in a row, or retryAfter when longer, bounded.
func cooldown(n int, retryAfter time.Duration) time.Duration {
	cool := min(BaseCooldown<<min(n-1, 16), MaxCooldown)
	if retryAfter > cool {
		cool = min(retryAfter, MaxRetryAfter)
	}
	return cool
}

// failed records a failure of a request of account at u: the account backs off, and u cools down
// for all once enough accounts failed there (see Health above).
func (b *Board) failed(u *Upstream, account, reason string, retryAfter time.Duration) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(u)
	s.backoffOf(account, now).fail(now, retryAfter)
	s.runLength++
	s.run = slices.DeleteFunc(s.run, func(f accountFailure) bool { return f.account == account || now.Sub(f.at) > FailureWindow })
	s.run = append(s.run, accountFailure{at: now, account: account})
	if len(s.run) > CoolingAccounts {
		s.run = slices.Delete(s.run, 0, len(s.run)-CoolingAccounts)
	}
	if len(s.run) >= CoolingAccounts {
		s.failures++
		if until := now.Add(cooldown(s.failures, retryAfter)); until.After(s.until) {
			s.until = until
		}
	}
	s.recent = append(s.recent, Failure{At: now, Reason: reason})
	if len(s.recent) > recentKept {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-recentKept)
	}
}

// backoffOf returns account's backoff at the upstream, made when it has none.
func (s *healthState) backoffOf(account string, now time.Time) *backoff {
	if bo := s.backoffs[account]; bo != nil {
		return bo
	}
	if s.backoffs == nil {
		s.backoffs = map[string]*backoff{}
	}
	if len(s.backoffs) >= maxBackoffs {
		for name, bo := range s.backoffs {
			if !bo.until.After(now) {
				delete(s.backoffs, name)
			}
		}
	}
	bo := &backoff{}
	if len(s.backoffs) < maxBackoffs {
		s.backoffs[account] = bo
	}
	return bo
}

func (bo *backoff) fail(now time.Time, retryAfter time.Duration) {
	bo.failures++
	if until := now.Add(cooldown(bo.failures, retryAfter)); until.After(bo.until) {
		bo.until = until
	}
}

// succeeded records an answer to account that was not a failure: it ends the upstream's run of
// failures, and the account's.
func (b *Board) succeeded(u *Upstream, account string) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(u)
	s.failures, s.runLength, s.run, s.lastSuccess = 0, 0, s.run[:0], now
	delete(s.backoffs, account)
}

// coolingUntil is when u may serve account again: the end of its cooldown for all, or of the
// account's own backoff, whichever is later.
func (b *Board) coolingUntil(u *Upstream, account string) time.Time {
	if b == nil {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookup(u)
	if s == nil {
		return time.Time{}
	}
	until := s.until
	if bo := s.backoffs[account]; bo != nil && bo.until.After(until) {
		until = bo.until
	}
	return until
}

// healthy reports whether u may serve account at now.
func (b *Board) healthy(u *Upstream, account string, now time.Time) bool {
	return !b.coolingUntil(u, account).After(now)
}

// State describes u for the admin API.
func (b *Board) State(u *Upstream) UpstreamState {
	now := b.now()
	st := UpstreamState{
		Provider: u.provider, Name: u.Name, Address: u.BaseURL.Scheme + "://" + u.BaseURL.Host,
		Weight: u.weight(), Priority: u.Priority, Healthy: true, Recent: []Failure{},
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookup(u)
	if s == nil {
		return st
	}
	if s.until.After(now) {
		until := s.until
		st.Healthy, st.CoolingUntil = false, &until
	}
	if !s.lastSuccess.IsZero() {
		last := s.lastSuccess
		st.LastSuccess = &last
	}
	st.Failures = s.runLength
	for _, bo := range s.backoffs {
		if bo.until.After(now) {
			st.AccountsBackingOff++
		}
	}
	if len(s.recent) > 0 {
		st.Recent = slices.Clone(s.recent)
	}
	return st
}
