package storage

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The book of accounts: Badger serves one process (it locks its directory), so that process
// keeps the authoritative state of the accounts it uses in memory and decides every ledger
// operation there, under the account's lock, without reading Badger: the balance record, the
// open holds and the budget counters in use. An account is read from Badger on its first use;
// the writes its decisions make go to Badger through the ledger's group commit
// (badger_book_batch.go), and a caller is answered once its writes are committed. Badger's
// records stay the truth: an account may be dropped from memory whenever it has no writes
// waiting, and is read again on its next use.

// defaultBookAccounts is how many accounts the book keeps in memory; past it, the least recently
// used accounts without writes waiting are dropped until a quarter of the room is free.
const defaultBookAccounts = 1 << 14

// ledgerBook is the ledger's state in memory.
type ledgerBook struct {
	mu sync.Mutex
	// accounts are the accounts in memory; made on first use.
	accounts map[string]*bookAccount
	// holds maps a hold's id to its *bookHold: every open hold of an account in memory that
	// was used since the account was read, and ended holds until their end is committed.
	holds holdIndex
	// uses is the clock of lastUse: a count of account uses.
	uses atomic.Uint64
	// epoch is raised by a failed batch: state read or decided at an earlier epoch may be ahead
	// of Badger, and is read again.
	epoch atomic.Uint64
	// maxAccounts, when set (tests), replaces defaultBookAccounts.
	maxAccounts int

	budgets bookBudgets
	queue   batchQueue
}

// bookAccount is one account in memory. Its fields other than name, dead, epoch and pending
// are read and changed under mu only.
type bookAccount struct {
	mu   sync.Mutex
	name string
	// dead: dropped from the book; whoever locked it looks the account up again.
	dead atomic.Bool
	// epoch is one more than the book's epoch when bal was read (0: not read yet, or to be
	// read again: stale).
	epoch atomic.Uint64
	bal   balanceRecord
	// holds are the account's open holds in the book's holds map, to drop with the account
	// (a hold leaves it when its end is decided).
	holds map[string]*bookHold
	// transient is the sum of the account's open transient holds (Hold.Transient), which bal
	// counts (in Amount and Held) and Badger's records do not; transients is their number.
	// An account with any is never dropped.
	transient  int64
	transients int
	// pending counts the operations decided and not yet committed (or failed); an account
	// with any is never dropped.
	pending atomic.Int64
	// freed is what the ends of holds among them gave back to bal.Amount: a transient hold
	// that fits only with it is recorded instead (decideHold), so that it fails with them.
	freed   atomic.Int64
	lastUse atomic.Uint64
}

// bookHold is a hold in memory. rec changes only under its account's lock.
type bookHold struct {
	acct *bookAccount
	// epoch is the account's epoch when the hold was read or taken.
	epoch uint64
	rec   holdRecord
	// after is the balance after the hold's entry, once it is recorded (rec.EntryN set).
	after int64
	// stored, when set, is the hold's entry as read from Badger, or as it was when a binding
	// changed rec's Ref; nil: the entry is made from rec (entry), which saves a hold taken in
	// memory the room of a second copy of its fields.
	stored *LedgerEntry
	// batch is the batch that writes its latest change (committed by now, or not).
	batch *ledgerBatch
}

// entry is the hold's entry: what its Hold answered, with the ID, Account and BalanceAfter
// that recording it gave (none while it is transient and unrecorded).
func (h *bookHold) entry() LedgerEntry {
	if h.stored != nil {
		return *h.stored
	}
	r := &h.rec.Hold
	e := LedgerEntry{Time: r.Created, KeyID: r.KeyID, Model: r.Model, Ref: r.Ref, HoldID: r.ID, Kind: EntryHold, Amount: -r.Amount}
	if h.rec.EntryN != 0 {
		e.ID, e.Account, e.BalanceAfter = strconv.FormatUint(h.rec.EntryN, 10), r.Account, h.after
	}
	return e
}

// keepEntry stores the hold's entry as it is, before a change of rec (a binding's Ref) that the
// entry does not take.
func (h *bookHold) keepEntry() {
	if h.stored == nil {
		e := h.entry()
		h.stored = &e
	}
}

// current reports whether h is still the hold's state: its account neither dropped nor read
// again since.
func (h *bookHold) current() bool {
	return !h.acct.dead.Load() && h.epoch == h.acct.epoch.Load()
}

// openTransient reports whether h, with its account locked, is an open transient hold the
// account has: not one a refused Hold claimed and took back (unclaim), which whoever loaded it
// from the holds map before the take-back still sees.
func (h *bookHold) openTransient() bool {
	return h.current() && h.rec.Hold.Transient && h.rec.Hold.State == HoldOpen &&
		h.acct.holds[h.rec.Hold.ID] == h
}

// lockAccount returns the account in memory, locked, read from Badger if it is not (or was
// read before a failed batch).
func (k *ledgerBook) lockAccount(db *badger.DB, name string) (*bookAccount, error) {
	for {
		k.mu.Lock()
		if k.accounts == nil {
			k.accounts = make(map[string]*bookAccount)
		}
		a := k.accounts[name]
		if a == nil {
			k.evict() // before adding a: it is the least recently used until it is locked
			a = &bookAccount{name: name}
			k.accounts[name] = a
		}
		k.mu.Unlock()
		a.mu.Lock()
		if a.dead.Load() {
			a.mu.Unlock()
			continue
		}
		a.lastUse.Store(k.uses.Add(1))
		if epoch := k.epoch.Load() + 1; a.epoch.Load() != epoch {
			if err := k.read(db, a, epoch); err != nil {
				a.mu.Unlock()
				return nil, err
			}
		}
		return a, nil
	}
}

// read reads the account a (locked) from Badger, dropping what the book kept of it but its open
// transient holds, which Badger does not have.
func (k *ledgerBook) read(db *badger.DB, a *bookAccount, epoch uint64) error {
	var transient []*bookHold
	for id, h := range a.holds {
		if h.rec.Hold.Transient && h.rec.Hold.State == HoldOpen {
			transient = append(transient, h)
		} else {
			k.holds.CompareAndDelete(id, h)
		}
	}
	a.epoch.Store(0)
	var bal balanceRecord
	err := db.View(func(txn *badger.Txn) error {
		var err error
		bal, err = txnBalance(txn, a.name)
		return err
	})
	if err != nil {
		return err
	}
	a.bal, a.transient, a.transients = bal, 0, 0
	a.holds = make(map[string]*bookHold, len(transient))
	for _, h := range transient {
		kept := &bookHold{acct: a, epoch: epoch, rec: h.rec, after: h.after, stored: h.stored}
		k.holds.Store(h.rec.Hold.ID, kept)
		a.holds[h.rec.Hold.ID] = kept
		a.takeTransient(h.rec.Hold.Amount)
	}
	a.epoch.Store(epoch)
	return nil
}

// takeTransient counts a transient hold of amount in the account's (locked) balance.
func (a *bookAccount) takeTransient(amount int64) {
	a.bal.Amount -= amount
	a.bal.Held += amount
	a.transient += amount
	a.transients++
}

// recordTransient takes a transient hold of amount out of the account's (locked) balance, to
// record its hold entry (record puts it back).
func (a *bookAccount) recordTransient(amount int64) {
	a.bal.Amount += amount
	a.transient -= amount
	a.transients--
}

// recorded is the account's (locked) balance record as Badger has it: without its open
// transient holds.
func (a *bookAccount) recorded() balanceRecord {
	r := a.bal
	r.Amount += a.transient
	r.Held -= a.transient
	return r
}

// stale marks a (locked) for reading again: a decision made in memory was not written.
func (a *bookAccount) stale() { a.epoch.Store(0) }

// evict drops, with k.mu held, the least recently used accounts that have no writes waiting
// and are not locked, until a quarter of the room is free, when the book is full (when one
// more account would not fit).
func (k *ledgerBook) evict() {
	limit := k.maxAccounts
	if limit <= 0 {
		limit = defaultBookAccounts
	}
	if len(k.accounts) < limit {
		return
	}
	byUse := make([]*bookAccount, 0, len(k.accounts))
	for _, a := range k.accounts {
		byUse = append(byUse, a)
	}
	slices.SortFunc(byUse, func(x, y *bookAccount) int {
		return cmp.Compare(x.lastUse.Load(), y.lastUse.Load())
	})
	for _, a := range byUse {
		if len(k.accounts) <= limit*3/4 {
			return
		}
		if a.pending.Load() != 0 || !a.mu.TryLock() {
			continue
		}
		if a.pending.Load() == 0 && a.transients == 0 {
			a.dead.Store(true)
			for id, h := range a.holds {
				k.holds.CompareAndDelete(id, h)
			}
			delete(k.accounts, a.name)
		}
		a.mu.Unlock()
	}
}

// lockedHold returns the hold with a's lock held: from memory if it is there, else read from
// Badger (and kept in memory while it is open and a's). A hold of another account is returned
// as read, not kept. ErrNotFound: no such hold.
func (k *ledgerBook) lockedHold(db *badger.DB, a *bookAccount, id string) (*bookHold, error) {
	if h, ok := k.heldInMemory(a, id); ok {
		return h, nil
	}
	h := &bookHold{acct: a, epoch: a.epoch.Load(), stored: new(LedgerEntry)}
	err := db.View(func(txn *badger.Txn) error {
		if err := txnHold(txn, id, &h.rec); err != nil {
			return err
		}
		return txnEntry(txn, h.rec.Hold.Account, h.rec.EntryN, h.stored)
	})
	if err != nil {
		return nil, err
	}
	if h.rec.Hold.Account == a.name && h.rec.Hold.State == HoldOpen {
		k.keep(h)
	}
	return h, nil
}

// heldInMemory returns the hold with the ID id when the book has it, current, in the (locked)
// account a.
func (k *ledgerBook) heldInMemory(a *bookAccount, id string) (*bookHold, bool) {
	if h, ok := k.holds.Load(id); ok && h.acct == a && h.current() {
		return h, true
	}
	return nil, false
}

// keep puts h, a hold of its (locked) account, in memory, in place of whatever was kept of it.
func (k *ledgerBook) keep(h *bookHold) {
	k.holds.Store(h.rec.Hold.ID, h)
	h.acct.holds[h.rec.Hold.ID] = h
}

// claim puts h, a new hold of its (locked) account, in memory, unless another hold with its ID
// is there: then it returns that one's account, to look at it under that account's lock.
func (k *ledgerBook) claim(h *bookHold) (other string, claimed bool) {
	for {
		prev, loaded := k.holds.LoadOrStore(h.rec.Hold.ID, h)
		if !loaded {
			h.acct.holds[h.rec.Hold.ID] = h
			return "", true
		}
		if prev.current() {
			return prev.acct.name, false
		}
		if k.holds.CompareAndSwap(h.rec.Hold.ID, prev, h) {
			h.acct.holds[h.rec.Hold.ID] = h
			return "", true
		}
	}
}

// unclaim takes back claim.
func (k *ledgerBook) unclaim(h *bookHold) {
	k.holds.CompareAndDelete(h.rec.Hold.ID, h)
	delete(h.acct.holds, h.rec.Hold.ID)
}

// ended notes that h's end was committed: Badger has it, and memory need not.
func (k *ledgerBook) ended(h *bookHold) {
	k.holds.CompareAndDelete(h.rec.Hold.ID, h)
}

// holdAccount is the account of a hold (which never changes), to lock it: from memory, else
// from the hold's record.
func (b *Badger) holdAccount(holdID string) (string, error) {
	if h, ok := b.ledger.holds.Load(holdID); ok {
		return h.acct.name, nil
	}
	var rec holdRecord
	err := b.db.View(func(txn *badger.Txn) error { return txnHold(txn, holdID, &rec) })
	if err != nil {
		return "", err
	}
	return rec.Hold.Account, nil
}

// lockHold returns an existing hold with its account locked (unlock a.mu when done).
func (b *Badger) lockHold(holdID string) (*bookAccount, *bookHold, error) {
	account, err := b.holdAccount(holdID)
	if err != nil {
		return nil, nil, err
	}
	a, err := b.ledger.lockAccount(b.db, account)
	if err != nil {
		return nil, nil, err
	}
	h, err := b.ledger.lockedHold(b.db, a, holdID)
	if err != nil {
		a.mu.Unlock()
		return nil, nil, err
	}
	if h.rec.Hold.Account != account {
		a.mu.Unlock()
		return nil, nil, errors.New("ledger: a hold's account changed") // never: accounts are fixed
	}
	return a, h, nil
}

// transientHold is an open transient hold, which only memory has.
func (k *ledgerBook) transientHold(id string) (Hold, bool) {
	h, ok := k.holds.Load(id)
	if !ok {
		return Hold{}, false
	}
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	if !h.openTransient() {
		return Hold{}, false
	}
	return h.rec.Hold, true
}

// overdueTransient adds to holds (open, unbound holds from Badger, earliest deadline first) the
// open transient holds whose deadline is before now, and returns the limit earliest.
func (k *ledgerBook) overdueTransient(holds []Hold, now time.Time, limit int) []Hold {
	k.holds.Range(func(h *bookHold) bool {
		h.acct.mu.Lock()
		if h.openTransient() && !h.rec.Hold.Bound && h.rec.Hold.Deadline.Before(now) {
			holds = append(holds, h.rec.Hold)
		}
		h.acct.mu.Unlock()
		return true
	})
	slices.SortStableFunc(holds, func(x, y Hold) int { return x.Deadline.Compare(y.Deadline) })
	return holds[:min(len(holds), limit)]
}
