package storage

import (
	"context"
	"encoding/json"
	"time"
)

// Outbox holds callback events until they are delivered or given up. Events are found through
// an index ordered by due time, so an outbox with many pending events that are not due costs
// nothing until they are. A worker claims due events with a lease: while the lease runs, no
// other worker (in this process or another) is given the event; the worker then acknowledges
// (delivered or given up) or reschedules it, proving its claim with the event's Claim token. An
// event whose worker died becomes due again when its lease ends, so delivery is at least once.
type Outbox interface {
	// EnqueueEvent stores ev, due at ev.DueAt, unless an event with its ID is pending; it
	// reports whether it stored it. Events of one task change have one ID, so a change observed
	// twice is queued once.
	EnqueueEvent(ctx context.Context, ev Event) (bool, error)
	// ClaimDueEvents leases up to limit events due at now (DueAt <= now), earliest due first,
	// for lease: each comes back with a fresh Claim token, and is not due again before now+lease.
	// Two concurrent claimers never get the same event.
	ClaimDueEvents(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Event, error)
	// AckEvent removes a claimed event (delivered, or given up). It answers ErrLeaseLost when
	// the event is no longer held by claim (its lease ran out and it was claimed again), and
	// removes nothing then. A missing event also answers ErrLeaseLost.
	AckEvent(ctx context.Context, id, claim string) error
	// RescheduleEvent stores a claimed event's new Attempts and DueAt and ends the claim. It
	// answers ErrLeaseLost like AckEvent.
	RescheduleEvent(ctx context.Context, ev Event, claim string) error
	// NextEventDue returns the earliest DueAt among pending events (leased ones included, at
	// the end of their lease), or ok false when none is pending.
	NextEventDue(ctx context.Context) (due time.Time, ok bool, err error)
	// PendingEvents counts the pending events.
	PendingEvents(ctx context.Context) (int, error)
}

// Event is one callback delivery.
type Event struct {
	// ID is the webhook-id; it stays the same across retries.
	ID      string `json:"id"`
	TaskID  string `json:"task_id"`
	Account string `json:"account"`
	URL     string `json:"url"`
	// Host is the receiver's host (from URL), by which deliveries are bounded.
	Host string          `json:"host,omitempty"`
	Body json.RawMessage `json:"body"`
	// Attempts counts the failed attempts so far.
	Attempts int `json:"attempts"`
	// DueAt is when the next attempt is due (Unix nanoseconds).
	DueAt int64 `json:"due_at"`
	// CreatedAt is when the event was queued (Unix nanoseconds).
	CreatedAt int64 `json:"created_at"`
	// Claim is the token of the lease a worker holds (set by ClaimDueEvents; empty otherwise).
	Claim string `json:"claim,omitempty"`
}
