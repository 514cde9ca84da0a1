package providers

import (
	"slices"
	"sync"
	"time"
)

// Cooldown bounds. The n-th failure in a row cools an upstream down for BaseCooldown × 2^(n-1),
// at most MaxCooldown, or for the upstream's Retry-After when that is longer (at most
// MaxRetryAfter).
const (
	BaseCooldown  = time.Second
	MaxCooldown   = 2 * time.Minute
	MaxRetryAfter = time.Hour
	recentKept    = 8
)

// Board keeps the health of upstreams: the run of failures of each and when its cooldown ends.
// It is this process's view; every gateway instance keeps its own. One Board is shared by every
// config generation, so a reload keeps what was learnt.
type Board struct {
	// Now is the clock. Default: time.Now.
	Now func() time.Time

	mu     sync.Mutex
	states map[string]*healthState
}

// healthState is the record of one upstream.
type healthState struct {
	failures    int
	until       time.Time
	recent      []Failure
	lastSuccess time.Time
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
	// Failures is the current run of failures; Recent the last few failures, oldest first.
	Failures    int        `json:"failures"`
	Recent      []Failure  `json:"recent_failures"`
	LastSuccess *time.Time `json:"last_success,omitempty"`
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

func (b *Board) failed(u *Upstream, reason string, retryAfter time.Duration) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(u)
	s.failures++
	cool := BaseCooldown << min(s.failures-1, 16)
	cool = min(cool, MaxCooldown)
	if retryAfter > cool {
		cool = min(retryAfter, MaxRetryAfter)
	}
	if until := now.Add(cool); until.After(s.until) {
		s.until = until
	}
	s.recent = append(s.recent, Failure{At: now, Reason: reason})
	if len(s.recent) > recentKept {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-recentKept)
	}
}

func (b *Board) succeeded(u *Upstream) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(u)
	s.failures, s.lastSuccess = 0, now
}

func (b *Board) coolingUntil(u *Upstream) time.Time {
	if b == nil {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.lookup(u); s != nil {
		return s.until
	}
	return time.Time{}
}

// healthy reports whether u is out of cooldown at now.
func (b *Board) healthy(u *Upstream, now time.Time) bool {
	return !b.coolingUntil(u).After(now)
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
	st.Failures = s.failures
	if len(s.recent) > 0 {
		st.Recent = slices.Clone(s.recent)
	}
	return st
}
