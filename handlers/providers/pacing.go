package providers

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bounds of the pause after an upstream's 429: its Retry-After, at least MinThrottlePause and
// at most MaxThrottlePause; without a Retry-After, MinThrottlePause doubled for each 429 in a
// row, at most MaxThrottlePause.
const (
	MinThrottlePause = time.Second
	MaxThrottlePause = time.Minute
)

// pacer keeps an upstream's own pace: its max_rps as a token bucket (a tenth of a second's
// worth of calls at most in a burst, so that no clock second sees more than 1.1 × max_rps), and
// the pause its last 429 asked for. It is this process's: each
// gateway instance paces its own calls.
type pacer struct {
	mu      sync.Mutex
	limiter *rate.Limiter // nil without max_rps
	content *rate.Limiter // the part of max_rps that content reads may take; nil without max_rps
	paused  time.Time     // no call before then
	// wanted is until when other reads (the watcher's, a client's poll) wait for a share that
	// max_rps did not grant them: content reads keep to their part of max_rps until then.
	wanted   time.Time
	throttle int // the 429s in a row, for the pause without Retry-After
}

// newPacer returns the pacer of an upstream with the given max_rps (0: unbounded).
func newPacer(maxRPS float64) *pacer {
	p := &pacer{}
	if maxRPS > 0 {
		p.limiter = rate.NewLimiter(rate.Limit(maxRPS), max(1, int(math.Ceil(maxRPS/10))))
		part := maxRPS / ContentPart
		p.content = rate.NewLimiter(rate.Limit(part), max(2, int(math.Ceil(part/10))))
	}
	return p
}

// Now reads the clock of the upstream's health board (Board.Now), which tests set: the time
// by which its pace, its health and its signed credentials are reckoned.
func (u *Upstream) Now() time.Time {
	if u.health == nil {
		return time.Now()
	}
	return u.health.now()
}

// pace is u's pacer (made by prepare; here for an Upstream that prepare has not seen, a test's
// used from one goroutine).
func (u *Upstream) pace() *pacer {
	if u.pacing == nil {
		u.pacing = newPacer(u.MaxRPS)
	}
	return u.pacing
}

// Take asks to make n calls to u now. It grants what u's max_rps and its pause allow (all n
// for an upstream without max_rps that is not paused, 0 while it is paused) and says when to
// ask again for the rest.
func (u *Upstream) Take(n int) (granted int, retry time.Time) { return u.grant(n, true) }

// Available is Take without taking: how many of n calls u's max_rps and its pause allow now,
// and when to ask again for the rest.
func (u *Upstream) Available(n int) (granted int, retry time.Time) { return u.grant(n, false) }

// grant is Take (take) or Available.
func (u *Upstream) grant(n int, take bool) (granted int, retry time.Time) {
	p, now := u.pace(), u.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Before(p.paused) {
		return 0, p.paused
	}
	if p.limiter == nil || n <= 0 {
		return max(n, 0), now
	}
	tokens := p.limiter.TokensAt(now)
	granted = min(n, max(0, int(math.Floor(tokens)))) // creates (Spend) may leave a debt
	if take && granted > 0 && !p.limiter.AllowN(now, granted) {
		granted = 0
	}
	if granted == n {
		return granted, now
	}
	// The next call needs one whole token: what is missing, at max_rps.
	missing := 1 - (tokens - float64(granted))
	wait := time.Duration(missing / float64(p.limiter.Limit()) * float64(time.Second))
	retry = now.Add(max(wait, time.Millisecond))
	// The calls not granted wait for their shares, the last (n-granted-1)/max_rps after retry.
	p.want(retry.Add(time.Duration(float64(n-granted-1) / float64(p.limiter.Limit()) * float64(time.Second))))
	return granted, retry
}

// want records that a read waits for a share of max_rps until at least until (p.mu held):
// content reads keep to their part until a second after (MaxShareWait), by when its read has
// come back for it.
func (p *pacer) want(until time.Time) {
	if until = until.Add(MaxShareWait); until.After(p.wanted) {
		p.wanted = until
	}
}

// MaxShareWait bounds how long WaitShare waits for a call's share.
const MaxShareWait = time.Second

// WaitShare takes the share of one call to u right before it is made, waiting for it when it
// comes within MaxShareWait. It reports false, taking nothing, while u is paused after a 429 or
// when the share is further off (or ctx ends while waiting: the share is then spent).
func (u *Upstream) WaitShare(ctx context.Context) bool {
	p, now := u.pace(), u.Now()
	p.mu.Lock()
	if now.Before(p.paused) {
		p.mu.Unlock()
		return false
	}
	if p.limiter == nil {
		p.mu.Unlock()
		return true
	}
	r := p.limiter.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 {
		p.want(now.Add(wait))
	}
	if !r.OK() || wait > MaxShareWait {
		r.CancelAt(now)
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ContentPart divides max_rps for content reads: the calls that the content endpoint makes for
// its clients (a result's lookup, a credentialed download) take at most 1/ContentPart of an
// upstream's max_rps (two of them may go at once, one lookup's worth) while other reads wait for
// shares (the watcher's, see pacer.wanted), so the watcher's reads keep the rest whatever the
// downloads; and they queue for their calls among the watcher's, which thus never takes every
// share. While no other read waits, content reads may take the rate that is left unused: any share
// of max_rps, whatever their part (the accounts' turns keep each to one call waiting at a time).
const ContentPart = 4

// WaitContentShare takes the share of one content call to u (see ContentPart) right before it
// is made: a call of max_rps, within its content part, waiting for it when it comes within
// maxWait. While u is paused after a 429, or when the share is further off, it takes nothing and
// reports false with the time to ask again (a ctx that ends while waiting spends the share).
func (u *Upstream) WaitContentShare(ctx context.Context, maxWait time.Duration) (bool, time.Time) {
	p, now := u.pace(), u.Now()
	p.mu.Lock()
	if now.Before(p.paused) {
		p.mu.Unlock()
		return false, p.paused
	}
	if p.limiter == nil {
		p.mu.Unlock()
		return true, now
	}
	share := p.limiter.ReserveN(now, 1)
	wait := share.DelayFrom(now)
	part := noReservation
	if now.Before(p.wanted) {
		part = p.content.ReserveN(now, 1) // other reads wait for shares: the content part
		wait = max(wait, part.DelayFrom(now))
	}
	if !part.OK() || !share.OK() || wait > maxWait {
		share.CancelAt(now)
		part.CancelAt(now)
		p.mu.Unlock()
		return false, now.Add(max(wait, time.Second))
	}
	p.mu.Unlock()
	if wait <= 0 {
		return true, now
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true, now.Add(wait)
	case <-ctx.Done():
		return false, now.Add(wait)
	}
}

// noReservation is a reservation of nothing, which is OK and cancels nothing.
var noReservation = rate.NewLimiter(rate.Inf, 0).ReserveN(time.Time{}, 0)

// Allow takes one call of u's max_rps if there is one now and u is not paused.
func (u *Upstream) Allow() bool {
	n, _ := u.Take(1)
	return n == 1
}

// Spend counts a call made to u whatever its pace (a client's create): the calls the watcher
// makes next wait for it.
func (u *Upstream) Spend() {
	p := u.pace()
	if p.limiter == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limiter.ReserveN(u.Now(), 1) // a reservation is never cancelled: the call was made
}

// Throttled records a 429 of u: no call goes to u until retryAfter has passed (the provider's
// Retry-After, zero when it gave none), within the bounds above. It returns the pause's end.
func (u *Upstream) Throttled(retryAfter time.Duration) time.Time {
	p, now := u.pace(), u.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttle++
	pause := retryAfter
	if pause <= 0 {
		pause = MinThrottlePause << min(p.throttle-1, 6)
	}
	pause = min(max(pause, MinThrottlePause), MaxThrottlePause)
	if until := now.Add(pause); until.After(p.paused) {
		p.paused = until
	}
	return p.paused
}

// Unthrottled records an answer of u that was not a 429: the next 429's pause starts again from
// MinThrottlePause.
func (u *Upstream) Unthrottled() {
	p := u.pace()
	p.mu.Lock()
	p.throttle = 0
	p.mu.Unlock()
}

// PausedUntil is when u's last 429 allows calls again; zero or past when it does now.
func (u *Upstream) PausedUntil() time.Time {
	p := u.pace()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}
