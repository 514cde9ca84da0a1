package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// defaultBookBudgets is how many key budget counters the book keeps in memory; past it, those
// without writes waiting are dropped.
const defaultBookBudgets = 1 << 14

// bookBudgets are the key budget counters in memory (lk/<key id>\x00<period>). A counter is
// the key's, not an account's: its lock is this one, taken after the account's and held only
// to read and change counters.
type bookBudgets struct {
	mu sync.Mutex
	m  map[string]*bookBudget
	// drops counts the sweeps that dropped counters, so that a counter read from Badger before
	// a sweep is read again.
	drops uint64
	// max, when set (tests), replaces defaultBookBudgets.
	max int
}

// bookBudget is a counter in memory; its fields change under bookBudgets.mu.
type bookBudget struct {
	// epoch is the book's epoch when it was read (as bookAccount.epoch).
	epoch uint64
	// found: Badger has the counter (or a decision made it); a counter that is gone is not
	// changed by the end of a hold.
	found bool
	spent int64
	// expiresAt is when Badger drops the counter (Unix seconds; 0: never).
	expiresAt uint64
	// version counts its changes: a batch writes the latest value it holds.
	version uint64
	// pending counts changes not yet committed (or failed); a counter with any stays.
	pending int64
	// freed is what the ends of holds among them gave back to spent (as bookAccount.freed).
	freed int64
	// transient is the sum of the open transient holds in spent, which Badger's counter does
	// not have; a counter with any stays.
	transient int64
}

// budgetWrite is the value of a counter to write, of a version.
type budgetWrite struct {
	spent     int64
	expiresAt uint64
	version   uint64
}

// live reports whether the counter exists by Badger's (real) clock.
func (c *bookBudget) live() bool {
	return c.found && (c.expiresAt == 0 || c.expiresAt > uint64(time.Now().Unix()))
}

// lock returns the counter with bookBudgets.mu held (unlock it when done), read from Badger if
// it is not in memory or was read before a failed batch (an epoch before epoch).
func (bb *bookBudgets) lock(db *badger.DB, counter string, epoch uint64) (*bookBudget, error) {
	for {
		bb.mu.Lock()
		if c := bb.m[counter]; c != nil && c.epoch >= epoch {
			return c, nil
		}
		drops := bb.drops
		bb.mu.Unlock()
		// A counter not in memory has no writes waiting: Badger has its value.
		c := &bookBudget{epoch: epoch}
		err := db.View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte(counter))
			if errors.Is(err, badger.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			return item.Value(func(val []byte) error {
				if len(val) != 8 {
					return fmt.Errorf("%s is corrupt", counter)
				}
				c.found, c.spent, c.expiresAt = true, int64(binary.BigEndian.Uint64(val)), item.ExpiresAt()
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
		bb.mu.Lock()
		if bb.drops != drops {
			bb.mu.Unlock()
			continue // a sweep ran meanwhile: what was read may be older than what it dropped
		}
		prev := bb.m[counter]
		if prev != nil && prev.epoch >= epoch {
			return prev, nil // read by another meanwhile, and maybe changed since
		}
		if prev != nil {
			// Read before a failed batch: its open transient holds are not in Badger.
			c.spent += prev.transient
			c.transient = prev.transient
			if !c.found && prev.transient != 0 {
				// Taken by transient holds only, it was never written: it lives as long
				// as it did in memory, so that their ends charge it.
				c.found, c.expiresAt = true, prev.expiresAt
			}
		}
		if bb.m == nil {
			bb.m = make(map[string]*bookBudget)
		}
		bb.sweep() // before adding c, which has no writes waiting yet
		bb.m[counter] = c
		return c, nil
	}
}

// sweep drops, with bb.mu held, the counters without writes waiting when there are too many.
func (bb *bookBudgets) sweep() {
	limit := bb.max
	if limit <= 0 {
		limit = defaultBookBudgets
	}
	if len(bb.m) < limit {
		return
	}
	for name, c := range bb.m {
		if c.pending == 0 && c.transient == 0 {
			delete(bb.m, name)
		}
	}
	bb.drops++
}

// add changes the counter (locked) by delta, and returns the value to write: without the open
// transient holds.
func (c *bookBudget) add(delta int64) budgetWrite {
	c.spent += delta
	c.version++
	c.pending++
	return budgetWrite{spent: c.spent - c.transient, expiresAt: c.expiresAt, version: c.version}
}

// committed notes that n changes of the counter, which gave back freed, were committed or
// failed.
func (bb *bookBudgets) committed(c *bookBudget, n, freed int64) {
	bb.mu.Lock()
	c.pending -= n
	c.freed -= freed
	bb.mu.Unlock()
}

// appendBudgetCounter appends to b the Badger key of the key's budget counter for the period
// containing now (lk/<key id>\x00<period>), and returns when that period ends.
func appendBudgetCounter(b []byte, keyID, period string, now time.Time) ([]byte, time.Time) {
	return appendBudgetPeriod(append(append(append(b, prefixBudget...), keyID...), 0), period, now)
}

// holdBudget takes amount from the key's budget of the hold's period, and returns the counter
// and the write (none, c nil, for a transient hold: Badger's counter leaves it out). A transient
// hold that fits only in what ends not yet committed gave back is made a recorded one (its
// Transient cleared), to fail with them. ErrBudgetExceeded: it does not fit, and nothing
// changed.
func (k *ledgerBook) holdBudget(db *badger.DB, h *Hold, now time.Time, epoch uint64) (string, *bookBudget, budgetWrite, error) {
	var buf [96]byte
	key, end := appendBudgetCounter(buf[:0], h.KeyID, h.Budget.Period, now)
	counter := string(key)
	c, err := k.budgets.lock(db, counter, epoch)
	if err != nil {
		return "", nil, budgetWrite{}, err
	}
	defer k.budgets.mu.Unlock()
	if !c.live() {
		c.found, c.spent = true, c.transient
	}
	if c.spent+h.Amount > h.Budget.Limit {
		return "", nil, budgetWrite{}, ErrBudgetExceeded
	}
	c.expiresAt = 0
	if !end.IsZero() {
		// Kept budgetKeep past the period's end by Badger's clock, as a TTL counts.
		c.expiresAt = uint64(time.Now().Add(end.Sub(now) + budgetKeep).Unix())
	}
	if h.Transient && c.spent+c.freed+h.Amount > h.Budget.Limit {
		h.Transient = false
	}
	if h.Transient {
		c.spent += h.Amount
		c.transient += h.Amount
		return counter, nil, budgetWrite{}, nil
	}
	return counter, c, c.add(h.Amount), nil
}

// endBudget gives back to (or, charged past the hold, takes from) the counter a hold charged
// the difference, delta; transient is the amount of a transient hold that is now recorded. A
// counter that is gone (its period long over) is left alone (nil). It returns what it gave back
// (freed), for committed.
func (k *ledgerBook) endBudget(db *badger.DB, counter string, delta, transient int64, epoch uint64) (*bookBudget, budgetWrite, int64, error) {
	c, err := k.budgets.lock(db, counter, epoch)
	if err != nil {
		return nil, budgetWrite{}, 0, err
	}
	defer k.budgets.mu.Unlock()
	c.transient -= transient
	if !c.live() {
		return nil, budgetWrite{}, 0, nil
	}
	freed := max(-delta, 0)
	c.freed += freed
	return c, c.add(delta), freed, nil
}

// encode is the counter's value in Badger.
func (w budgetWrite) encode() []byte {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(w.spent))
	return buf[:]
}
