package storage

import (
	"context"
	"time"
)

// Coordination is what gateway processes share to work together: leases for work that one worker
// must do at a time, counters with limits, and sliding-window rate limits.
type Coordination interface {
	// AcquireLease takes the named lease for owner until now+ttl if it is free, expired, or
	// already owner's (then it is renewed). It reports whether owner holds it.
	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error)
	// RenewLease extends owner's lease to now+ttl (or cuts it short to that), or answers
	// ErrLeaseLost when owner no longer holds it.
	RenewLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) error
	// RenewLeases is RenewLease for many leases of one owner at once, in as few round trips as
	// the backend allows (one on Redis): each lease that owner holds is extended to now+ttl, each
	// on its own check, and the others are left alone. It returns the indexes (into names) of the
	// leases that owner no longer holds. An error means that none or only some were renewed; the
	// caller learns nothing about which, and may try again.
	RenewLeases(ctx context.Context, names []string, owner string, now time.Time, ttl time.Duration) (lost []int, err error)
	// ReleaseLease frees owner's lease; a lease held by another owner (or none) is left alone.
	ReleaseLease(ctx context.Context, name, owner string) error

	// AddCounter adds delta to a named counter and returns the new value, atomically. When
	// delta is positive, limit is not negative and the new value would exceed limit, nothing
	// changes and ok is false. Counters never expire. A change that was made but cannot be
	// confirmed durable (a failed disk sync, too few replicas) is answered as it then stands: a
	// positive delta is taken back and the call fails; a negative one (a refund, a slot release,
	// which callers retry when it fails) stays and counts as done.
	AddCounter(ctx context.Context, name string, delta, limit int64) (value int64, ok bool, err error)
	// ReserveCounter is AddCounter for a reservation that a later durable write of the caller
	// confirms (an active-task slot or a quota charge taken before the task record is
	// written): the change is made atomically against limit as AddCounter makes it, but the
	// call may return before it is on disk. It is on disk once any durable write that starts
	// after the call returned has returned; a crash of the process before then may lose it.
	// Backends without a cheaper write make it durable at once.
	ReserveCounter(ctx context.Context, name string, delta, limit int64) (value int64, ok bool, err error)
	// Counter returns a counter's value; a counter never written is 0.
	Counter(ctx context.Context, name string) (int64, error)

	// AllowRate counts one event against a sliding window of limit events per window under
	// name, atomically, if the window has room; otherwise it counts nothing and returns when to
	// retry. The embedded backend may keep windows in memory (it is one process); shared
	// backends keep them in the store, so every process sees one window.
	AllowRate(ctx context.Context, name string, limit int, window time.Duration, now time.Time) (ok bool, retryAfter time.Duration, err error)
}
