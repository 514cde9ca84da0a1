// Package storage holds mediagw's state: API keys, accounts, task ownership records, idempotency
// records, the callback outbox, leases, counters and rate windows. It knows nothing of HTTP or
// Caddy.
//
// Store is the contract every backend implements and the only thing the rest of mediagw uses.
// Badger (embedded, one process) is the default backend; a Redis backend lets several gateway
// instances share one state. The contract speaks the domain, not raw keys, and assumes nothing
// about being the only process: every state change is a create-if-absent or a compare-and-set,
// so that exactly one of two racing writers wins, and only the winner performs the side effect
// that goes with the change (a refund, a slot release, a callback).
//
// A backend must pass the conformance suite in package storage/storetest (storetest.Run) under
// go test -race before it is used.
//
// # Durability
//
// A write is durable when the call returns without error: an acknowledged write survives a crash
// of the process (kill -9) right after. Backends may share one disk sync between concurrent
// writers (group commit), but never acknowledge before the sync. The one exception is
// Coordination.ReserveCounter, whose change is made durable by the caller's next durable write.
//
// # Time
//
// Methods that depend on the current time take it as an argument (now) where a caller's clock
// matters (outbox, rate limits, leases) so that they can be tested without sleeping. TTLs on
// records are enforced by the backend's own clock.
package storage

import (
	"context"
	"errors"
	"io"
)

// Errors of the contract. Backends return these (possibly wrapped); callers test with errors.Is.
var (
	// ErrNotFound: the record does not exist (or has expired).
	ErrNotFound = errors.New("not found")
	// ErrExists: a create-if-absent found a record already there.
	ErrExists = errors.New("already exists")
	// ErrConflict: a compare-and-set found another version than the one given; re-read and retry
	// (see UpdateTask), or give up if the other writer's change makes yours moot.
	ErrConflict = errors.New("changed concurrently")
	// ErrLeaseLost: the caller's lease (on an outbox event or a named lease) has expired and
	// another worker may hold it now; the caller must stop the leased work's side effects.
	ErrLeaseLost = errors.New("lease lost")
)

// Store is all the state mediagw keeps. Implementations are safe for concurrent use by many
// goroutines and, where the backend allows it, by many processes.
type Store interface {
	Directory
	Tasks
	Items
	Watching
	Idempotency
	Outbox
	Coordination
	Settings
	Ledger
	Deliveries
	// Close releases the backend. Callers must not use the Store afterwards.
	io.Closer
}

// Settings are small values the gateway creates once and then keeps (the generated webhook
// secret). They never expire.
type Settings interface {
	// SettingOnce stores val under name unless a value is already there, atomically, and
	// returns the stored value: val when this call stored it, the existing value otherwise. Two
	// processes starting at once agree on one value.
	SettingOnce(ctx context.Context, name string, val []byte) ([]byte, error)
}
