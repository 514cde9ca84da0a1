package storage

import (
	"context"
	"time"
)

// Idempotency holds the records that make creates safe to retry. A record is claimed
// (create-if-absent) when a request with an Idempotency-Key starts, by an owner token unique to
// that request; only that owner may complete it or give it up.
type Idempotency interface {
	// BeginIdempotent stores rec (InFlight, with its Owner) under key for ttl unless a record is
	// there, atomically. It returns (rec, true) when it stored rec, and (the existing record,
	// false) otherwise. An in-flight record whose owner died is freed by its ttl.
	BeginIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) (IdempotencyRecord, bool, error)
	// CompleteIdempotent replaces the in-flight record of rec.Owner with rec (the kept answer),
	// for ttl. It answers ErrConflict when the stored record is not that owner's in-flight
	// record (it expired and another request claimed the key), and stores nothing then.
	CompleteIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error
	// AbandonIdempotent removes the in-flight record of owner, so that the key may be used
	// again; another owner's record, or a completed one, is left alone. A missing record is not
	// an error.
	AbandonIdempotent(ctx context.Context, key, owner string) error
	// RenewIdempotent extends the in-flight record of owner to expire ttl from now. It returns
	// ErrConflict when the record is no longer owner's in-flight record (the lease expired and a
	// retry took the key, or the request completed): a lost lease is never taken back.
	RenewIdempotent(ctx context.Context, key, owner string, ttl time.Duration) error
}

// MaxIdempotentAnswer is the largest answer body a record keeps: every backend stores a record
// with a body of this size (about 11 MiB as the JSON it is written in). A record is read whole by
// every retry of its key, and Redis keeps it in memory for the retention: room for an edit's
// image or two in b64_json, not for any answer.
const MaxIdempotentAnswer = 8 << 20

// IdempotencyRecord is the state of one Idempotency-Key: in flight, or the kept answer.
type IdempotencyRecord struct {
	// Owner identifies the request that claimed the key (random, unique per request).
	Owner string `json:"owner,omitempty"`
	// InFlight is true while the first request runs.
	InFlight bool `json:"in_flight,omitempty"`
	// RequestHash identifies the request (method, path, body) that claimed the key.
	RequestHash string `json:"request_hash"`
	// Status, ContentType and Body are the kept answer.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
	// Unkept marks a completed request whose own answer was not kept (too large, or refused by
	// the store): the key is spent (a retry is not run again), and the answer kept instead is
	// the 409 that says so.
	Unkept bool `json:"unkept,omitempty"`
}
