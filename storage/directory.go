package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"time"
	"unsafe"
)

// MaxDirectoryStaleness bounds how long a process may keep using a key or account record that
// another process has changed (revoked, disabled, limited). A change made through a Store value
// is seen by that same Store value at once: the process that revokes a key refuses it from the
// next request on. Other processes sharing the backend see it within MaxDirectoryStaleness.
const MaxDirectoryStaleness = time.Second

// Directory holds API keys and accounts. Every record carries a Version that the backend raises
// on each write; writes are compare-and-set on it, so two administrators editing one key at once
// cannot silently undo each other's change. Backends may cache records for the per-request
// lookups (KeyByHash, Account), within the MaxDirectoryStaleness bound; a cache fill that races a
// write never keeps the older record.
type Directory interface {
	// CreateKey stores a new key with Version 1, or answers ErrExists when its id or hash is
	// already stored. The returned record carries the stored Version.
	CreateKey(ctx context.Context, key APIKey) (APIKey, error)
	// UpdateKey replaces a stored key if its stored Version equals key.Version, and returns the
	// record with its new Version. It answers ErrNotFound for a missing key and ErrConflict for
	// another version. The hash and id of a key never change.
	UpdateKey(ctx context.Context, key APIKey) (APIKey, error)
	// DeleteKey removes a key, or answers ErrNotFound.
	DeleteKey(ctx context.Context, id string) error
	// KeyByHash finds a key by the SHA-256 of its secret (see HashSecret).
	KeyByHash(ctx context.Context, hash string) (APIKey, error)
	// KeyByID finds a key by its public id, reading the backend (not a cache): use it before an
	// UpdateKey.
	KeyByID(ctx context.Context, id string) (APIKey, error)
	// ListKeys returns every stored key, ordered by id. It reads every key: pages use KeysPage.
	ListKeys(ctx context.Context) ([]APIKey, error)
	// KeysPage returns a page of keys ordered by id, from the cursor of q, and whether more keys
	// follow in the direction read. With q.Account it reads that account's index only, never
	// the keys of other accounts.
	KeysPage(ctx context.Context, q DirectoryPage) (keys []APIKey, more bool, err error)

	// SaveAccount stores an account record if the stored Version equals acct.Version (0: no
	// record yet), and returns it with its new Version; ErrConflict otherwise. After an
	// ErrConflict, Account reads the backend (not a cache), so a retry sees the current version.
	SaveAccount(ctx context.Context, acct Account) (Account, error)
	// Account returns the account record, or ErrNotFound if the account has none.
	Account(ctx context.Context, name string) (Account, error)
	// ListAccounts returns every account record, ordered by name. It reads every record: pages
	// use AccountsPage.
	ListAccounts(ctx context.Context) ([]Account, error)
	// AccountsPage returns a page of accounts ordered by name, from the cursor of q, and whether
	// more follow in the direction read: every account that has a record or has had a key (one
	// without a record of its own is the zero Account with its Name). q.Account is ignored.
	AccountsPage(ctx context.Context, q DirectoryPage) (accts []Account, more bool, err error)

	// DirectoryVersion is a number that changes whenever any key or account record changes, in
	// any process: a change feed in one number, for caches above the Store. It never goes down.
	DirectoryVersion(ctx context.Context) (uint64, error)
}

// MaxDirectoryPage is the largest Limit of a DirectoryPage.
const MaxDirectoryPage = 1000

// DirectoryPage selects a page of keys (by id) or accounts (by name), in byte order of the id or
// name, from a cursor: the page starts after After, or ends before Before (read backwards, for
// a "previous" link; the page is still in ascending order), or starts at the first.
type DirectoryPage struct {
	// After and Before are the cursors: the last id or name of the page before, or the first
	// of the page after. At most one is set.
	After, Before string
	// Account, for keys, selects that account's keys only.
	Account string
	// Limit is the page size, 1 to MaxDirectoryPage (values out of range are brought into it).
	Limit int
}

// normal brings Limit into its range.
func (q *DirectoryPage) normal() {
	q.Limit = min(max(q.Limit, 1), MaxDirectoryPage)
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
	// Version is raised by the backend on every write (1 after CreateKey).
	Version int64 `json:"version,omitempty"`
	// Limits bound what the key may use.
	Limits
}

// Limits bound the use of one key. Zero values mean no limit.
type Limits struct {
	// Quota is the former per-key limit in cost units, now an alias of a Budget of Quota whole
	// units of the currency for all time (see SpendingLimit). Nil means none. A key has a
	// Quota or a Budget, not both.
	Quota *int64 `json:"quota,omitempty"`
	// RateRequests requests are allowed per RateWindow (a sliding window); 0 means no limit.
	RateRequests int           `json:"rate_requests,omitempty"`
	RateWindow   time.Duration `json:"rate_window,omitempty"`
	// MaxActiveTasks bounds the key's unfinished video tasks; 0 means no limit.
	MaxActiveTasks int64 `json:"max_active_tasks,omitempty"`
	// Budget is the money the key may spend per period, a sub-limit of its account's balance,
	// checked by every hold (see Ledger.Hold). A zero Limit: none.
	Budget Budget `json:"budget,omitzero"`
}

// Account is the stored state of an account.
type Account struct {
	Name     string `json:"name"`
	Disabled bool   `json:"disabled,omitempty"`
	// Version is raised by the backend on every write (1 after the first SaveAccount).
	Version int64 `json:"version,omitempty"`
}

// HashSecret returns the hex SHA-256 of an API key secret, the form in which keys are stored
// and looked up.
func HashSecret(secret string) string {
	text := SecretHash(secret)
	return string(text[:])
}

// SecretHash is HashSecret's text as an array, made without allocating: a lookup by
// string(hash[:]) in a map allocates nothing either.
func SecretHash(secret string) [2 * sha256.Size]byte {
	// The secret's bytes, read in place: Sum256 only reads them, and []byte(secret) would copy a
	// secret longer than 32 bytes (a generated one is 55) to the heap.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(secret), len(secret)))
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return text
}

// microPerUnit is the micro-units in one unit of the currency.
const microPerUnit = 1_000_000

// SpendingLimit is the budget a hold checks for the key: Budget when it has one, else the
// Quota alias, a budget of Quota whole units for all time (capped at MaxAmount). none reports
// a Quota of 0, which no hold of more than nothing fits (a zero Budget Limit means no budget,
// so it cannot say that itself).
func (l Limits) SpendingLimit() (b Budget, none bool) {
	if l.Budget.Limit > 0 || l.Quota == nil {
		return l.Budget, false
	}
	q := *l.Quota
	switch {
	case q <= 0:
		return Budget{}, true
	case q > MaxAmount/microPerUnit:
		return Budget{Limit: MaxAmount}, false
	}
	return Budget{Limit: q * microPerUnit}, false
}
