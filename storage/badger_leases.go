package storage

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Badger's leases (Coordination) are records l/<name> written without a disk sync: Badger serves
// one process (it locks its directory), so every holder dies with the process. This process
// writes every lease there is, so it keeps their owners in memory too (leaseBook): the watcher's
// NoteReads, which checks a lease per shard before each batch of upstream reads, checks them
// there instead of reading and decoding a record per shard from Badger.

// lease is a stored lease: its owner and when it ends (Unix nanoseconds).
type lease struct {
	Owner string `json:"owner"`
	Until int64  `json:"until"`
}

// leaseBook holds the owner of each lease as Badger has it. Every lease write holds mu from
// before its transaction to after the book records what it committed, so the book changes in the
// order of the commits, and a check under mu sees every lease committed before it and none after.
// A lease the book does not know (this process has not written it: one left by the process
// before, or one whose write failed after an unknown outcome) is read from Badger, under mu.
type leaseBook struct {
	mu    sync.Mutex
	known map[string]leaseOwner
}

// leaseOwner is a lease as the book knows it: its owner ("" for none), and when Badger's TTL
// drops the record (the wall clock, as Badger's TTL counts; zero for none).
type leaseOwner struct {
	owner string
	gone  time.Time
}

// leaseWrites are the leases a write's transaction set or deleted, for the book.
type leaseWrites map[string]leaseOwner

// set writes owner's lease name until now+ttl into txn, and notes it in w.
func (w leaseWrites) set(txn *badger.Txn, name, owner string, now time.Time, ttl time.Duration) error {
	keep := ttl + time.Minute
	w[name] = leaseOwner{owner: owner, gone: time.Unix(time.Now().Add(keep).Unix(), 0)}
	return setJSON(txn, prefixLease+name, lease{Owner: owner, Until: now.Add(ttl).UnixNano()}, keep)
}

// delete deletes lease name in txn, and notes it in w.
func (w leaseWrites) delete(txn *badger.Txn, name string) error {
	w[name] = leaseOwner{}
	return txn.Delete([]byte(prefixLease + name))
}

// writeLeases runs fn in a transaction that writes leases (through its leaseWrites), under the
// book's lock, and records in the book what it committed. After a failure whose outcome is not
// known, the book forgets the leases fn wrote, so that they are read from Badger again.
func (b *Badger) writeLeases(ctx context.Context, fn func(txn *badger.Txn, w leaseWrites) error) error {
	book := &b.reads.leases
	book.mu.Lock()
	defer book.mu.Unlock()
	w := leaseWrites{}
	err := b.updateVolatile(ctx, func(txn *badger.Txn) error {
		clear(w)
		return fn(txn, w)
	})
	known := book.entries()
	for name, l := range w {
		if err == nil {
			known[name] = l
		} else {
			delete(known, name)
		}
	}
	return err
}

// entries is the book's map of leases, made at its first use. The caller holds mu.
func (k *leaseBook) entries() map[string]leaseOwner {
	if k.known == nil {
		k.known = map[string]leaseOwner{}
	}
	return k.known
}

// notHeld returns the indexes of the groups whose lease owner does not hold (by owner only, as
// NoteReads asks), as Badger has the leases now.
func (b *Badger) notHeld(owner string, groups []ShardReads) ([]int, error) {
	book := &b.reads.leases
	book.mu.Lock()
	defer book.mu.Unlock()
	known := book.entries()
	now := time.Now()
	var lost []int
	for i, g := range groups {
		l, ok := known[g.Lease]
		if !ok {
			var err error
			if l, err = b.readLease(g.Lease); err != nil {
				return nil, err
			}
			known[g.Lease] = l
		}
		if l.owner != owner || !l.gone.IsZero() && !now.Before(l.gone) {
			lost = append(lost, i)
		}
	}
	return lost, nil
}

// readLease reads lease name from Badger for the book.
func (b *Badger) readLease(name string) (leaseOwner, error) {
	var l leaseOwner
	err := b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixLease + name))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var cur lease
		if err := item.Value(func(val []byte) error { return json.Unmarshal(val, &cur) }); err != nil {
			return err
		}
		l.owner = cur.Owner
		if at := item.ExpiresAt(); at > 0 {
			l.gone = time.Unix(int64(at), 0)
		}
		return nil
	})
	return l, err
}

func (b *Badger) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	held := false
	err := b.writeLeases(ctx, func(txn *badger.Txn, w leaseWrites) error {
		held = false
		var cur lease
		if err := txnGetJSON(txn, prefixLease+name, &cur); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if cur.Owner != "" && cur.Owner != owner && cur.Until > now.UnixNano() {
			return errNothingToWrite
		}
		held = true
		return w.set(txn, name, owner, now, ttl)
	})
	return held, err
}

func (b *Badger) RenewLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) error {
	return b.writeLeases(ctx, func(txn *badger.Txn, w leaseWrites) error {
		if held, err := txnLeaseHeld(txn, name, owner, now); err != nil {
			return err
		} else if !held {
			return ErrLeaseLost
		}
		return w.set(txn, name, owner, now, ttl)
	})
}

// txnLeaseHeld reports whether owner holds lease name at now (a lease that is not there is not
// held).
func txnLeaseHeld(txn *badger.Txn, name, owner string, now time.Time) (bool, error) {
	var cur lease
	if err := txnGetJSON(txn, prefixLease+name, &cur); errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return cur.Owner == owner && cur.Until > now.UnixNano(), nil
}

// RenewLeases renews the leases in one transaction.
func (b *Badger) RenewLeases(ctx context.Context, names []string, owner string, now time.Time, ttl time.Duration) ([]int, error) {
	var lost []int
	err := b.writeLeases(ctx, func(txn *badger.Txn, w leaseWrites) error {
		lost = lost[:0]
		for i, name := range names {
			if held, err := txnLeaseHeld(txn, name, owner, now); err != nil {
				return err
			} else if !held {
				lost = append(lost, i)
				continue
			}
			if err := w.set(txn, name, owner, now, ttl); err != nil {
				return err
			}
		}
		if len(lost) == len(names) {
			return errNothingToWrite
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return lost, nil
}

func (b *Badger) ReleaseLease(ctx context.Context, name, owner string) error {
	return b.writeLeases(ctx, func(txn *badger.Txn, w leaseWrites) error {
		var cur lease
		if err := txnGetJSON(txn, prefixLease+name, &cur); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if cur.Owner != owner {
			return nil
		}
		return w.delete(txn, name)
	})
}

// Interface guards
var _ Coordination = (*Badger)(nil)
