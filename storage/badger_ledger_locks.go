package storage

import (
	"context"
	"sync"
	"sync/atomic"
)

// ledgerLockStripes is the number of locks the accounts share.
const ledgerLockStripes = 64

// maxHoldHints bounds the hold → account hints kept in memory (one per open hold this process
// took; a video task's hold stays open while the task runs). Past it, a hold's account is read
// from its record when it ends.
const maxHoldHints = 1 << 17

// ledgerLocks serialise the ledger transactions of each account (Badger serves one process).
// They also remember the account of each open hold this process took, so that ending or
// binding it need not first read the hold's record to find which account's lock to take.
type ledgerLocks struct {
	stripes [ledgerLockStripes]sync.Mutex
	// accounts maps an open hold's id to its account (a string), or once a task's create bound
	// it, to a boundHint; hints counts its entries.
	accounts sync.Map
	hints    atomic.Int64
}

// boundHint is the note of an open hold that a task's create bound to its task.
type boundHint struct{ account, task string }

// of is the lock of account's stripe, chosen by the account's 32-bit FNV-1a hash (computed
// here rather than through hash/fnv, whose hash.Hash allocates on every call).
func (l *ledgerLocks) of(account string) *sync.Mutex {
	h := uint32(2166136261) // FNV-1a offset basis
	for i := 0; i < len(account); i++ {
		h ^= uint32(account[i])
		h *= 16777619 // FNV prime
	}
	return &l.stripes[h%ledgerLockStripes]
}

// remember notes the account of a hold just taken, unless maxHoldHints are kept already.
func (l *ledgerLocks) remember(holdID, account string) {
	if l.hints.Load() >= maxHoldHints {
		return
	}
	if _, loaded := l.accounts.LoadOrStore(holdID, account); !loaded {
		l.hints.Add(1)
	}
}

// boundAtCreate notes that CreateTask bound a hold, noted by remember, to task; a hold without
// a note (ended meanwhile, or past maxHoldHints) stays without.
func (l *ledgerLocks) boundAtCreate(holdID, account, task string) {
	l.accounts.CompareAndSwap(holdID, account, boundHint{account, task})
}

// boundTo reports whether the hold is open and its create bound it to task, as far as the
// notes tell (false: not known).
func (l *ledgerLocks) boundTo(holdID, task string) bool {
	note, _ := l.accounts.Load(holdID)
	b, ok := note.(boundHint)
	return ok && b.task == task
}

// accountOf is the account of a note.
func accountOf(note any) string {
	if b, ok := note.(boundHint); ok {
		return b.account
	}
	account, _ := note.(string) // the only other kind of note
	return account
}

// forget drops the note of a hold that has ended.
func (l *ledgerLocks) forget(holdID string) {
	if _, loaded := l.accounts.LoadAndDelete(holdID); loaded {
		l.hints.Add(-1)
	}
}

// holdAccount is the account of a hold (which never changes), for the lock of its
// transactions: from the note Hold made, else from the hold's record (a hold taken before a
// restart, or past maxHoldHints). The note only picks the lock; each transaction still reads
// the record itself, and Badger's conflict check keeps it right whichever lock was taken.
func (b *Badger) holdAccount(ctx context.Context, holdID string) (string, error) {
	if note, ok := b.ledger.accounts.Load(holdID); ok {
		return accountOf(note), nil
	}
	h, err := b.HoldByID(ctx, holdID)
	if err != nil {
		return "", err
	}
	return h.Account, nil
}
