// Package storage holds mediagw's state: API keys, accounts and task ownership records. It knows
// nothing of HTTP or Caddy. Store is the one interface the rest of mediagw uses; Badger (embedded,
// one process) is the default implementation.
package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"time"
)

// ErrNotFound is returned when a key, account or task does not exist (or has expired).
var ErrNotFound = errors.New("not found")

// Store is the state that mediagw keeps. Every write is durable when the call returns: an
// acknowledged write survives a crash of the process.
type Store interface {
	// PutKey creates or replaces an API key record.
	PutKey(ctx context.Context, key APIKey) error
	// KeyByHash finds a key by the SHA-256 of its secret (see HashSecret).
	KeyByHash(ctx context.Context, hash string) (APIKey, error)
	// KeyByID finds a key by its public id.
	KeyByID(ctx context.Context, id string) (APIKey, error)
	// ListKeys returns every stored key, ordered by id.
	ListKeys(ctx context.Context) ([]APIKey, error)
	// DeleteKey removes a key, or answers ErrNotFound.
	DeleteKey(ctx context.Context, id string) error

	// PutAccount creates or replaces an account record.
	PutAccount(ctx context.Context, acct Account) error
	// Account returns the account record, or ErrNotFound if the account has none.
	Account(ctx context.Context, name string) (Account, error)
	// ListAccounts returns every account record, ordered by name.
	ListAccounts(ctx context.Context) ([]Account, error)

	// AddCounter adds delta to a named counter and returns the new value, atomically. When
	// limit is not negative and the new value would exceed it, nothing changes and ok is false.
	AddCounter(ctx context.Context, name string, delta, limit int64) (value int64, ok bool, err error)
	// Counter returns a counter's value; a counter never written is 0.
	Counter(ctx context.Context, name string) (int64, error)

	// Claim stores val under key unless a record is already there, atomically. It returns
	// (nil, true) when it stored val, and (the existing record, false) otherwise. The record
	// expires after ttl.
	Claim(ctx context.Context, key string, val []byte, ttl time.Duration) (existing []byte, claimed bool, err error)
	// PutRecord stores val under key, replacing any record; it expires after ttl (0: never).
	PutRecord(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Record returns the record under key, or ErrNotFound.
	Record(ctx context.Context, key string) ([]byte, error)
	// DeleteRecord removes a record; a missing one is not an error.
	DeleteRecord(ctx context.Context, key string) error
	// ScanRecords calls fn for every record whose key starts with prefix, in key order, until fn
	// returns false.
	ScanRecords(ctx context.Context, prefix string, fn func(key string, val []byte) bool) error

	// PutTask creates or replaces a task ownership record. The record expires after the
	// store's task retention, counted from the task's creation.
	PutTask(ctx context.Context, task Task) error
	// Task returns the record of a task id, or ErrNotFound.
	Task(ctx context.Context, id string) (Task, error)
	// ListTasks returns one account's tasks of one kind, newest first, filtered and paginated.
	ListTasks(ctx context.Context, account string, q TaskQuery) (TaskPage, error)
	// DeleteTask removes a task record; deleting a missing task is not an error.
	DeleteTask(ctx context.Context, id string) error
	// UnfinishedTasks calls fn with the id of every unfinished task (see Task.Unfinished), until
	// fn returns false.
	UnfinishedTasks(ctx context.Context, fn func(id string) bool) error
}

// APIKey is a stored API key. The secret itself is never stored, only its SHA-256.
type APIKey struct {
	// ID is the public identifier of the key: safe to log, shown in access logs as the user id.
	ID string `json:"id"`
	// Hash is the hex SHA-256 of the secret.
	Hash string `json:"hash"`
	// Account owns the key; tasks belong to accounts, not to keys.
	Account string `json:"account"`
	// Models are glob patterns of the models the key may use. Empty means all.
	Models []string `json:"models,omitempty"`
	// AllowIPs restricts the client addresses that may use the key. Empty means any.
	AllowIPs []netip.Prefix `json:"allow_ips,omitempty"`
	// Disabled keys are refused with 403.
	Disabled bool `json:"disabled,omitempty"`
	// ExpiresAt, when set, is the moment from which the key is refused with 403.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Limits bound what the key may use.
	Limits
}

// Limits bound the use of one key. Zero values mean no limit.
type Limits struct {
	// Quota is the total cost the key may consume (each model has a cost per request or task,
	// 1 by default). Nil means unlimited.
	Quota *int64 `json:"quota,omitempty"`
	// RateRequests requests are allowed per RateWindow (a sliding window); 0 means no limit.
	RateRequests int           `json:"rate_requests,omitempty"`
	RateWindow   time.Duration `json:"rate_window,omitempty"`
	// MaxActiveTasks bounds the key's unfinished video tasks; 0 means no limit.
	MaxActiveTasks int64 `json:"max_active_tasks,omitempty"`
}

// Account is the stored state of an account.
type Account struct {
	Name     string `json:"name"`
	Disabled bool   `json:"disabled,omitempty"`
}

// HashSecret returns the hex SHA-256 of an API key secret, the form in which keys are stored
// and looked up.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
