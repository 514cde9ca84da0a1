package storage

import (
	"context"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func (b *Badger) BeginIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) (IdempotencyRecord, bool, error) {
	var existing IdempotencyRecord
	began := false
	err := b.update(ctx, func(txn *badger.Txn) error {
		began = false
		if err := txnGetJSON(txn, prefixIdem+key, &existing); err == nil {
			return errNothingToWrite
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		began = true
		return setJSON(txn, prefixIdem+key, rec, ttl)
	})
	if err != nil {
		return IdempotencyRecord{}, false, err
	}
	if began {
		return rec, true, nil
	}
	return existing, false, nil
}

func (b *Badger) CompleteIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		var cur IdempotencyRecord
		if err := txnGetJSON(txn, prefixIdem+key, &cur); errors.Is(err, ErrNotFound) {
			return ErrConflict
		} else if err != nil {
			return err
		}
		if !cur.InFlight || cur.Owner != rec.Owner {
			return ErrConflict
		}
		rec.InFlight = false
		return setJSON(txn, prefixIdem+key, rec, ttl)
	})
}

func (b *Badger) AbandonIdempotent(ctx context.Context, key, owner string) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		var cur IdempotencyRecord
		if err := txnGetJSON(txn, prefixIdem+key, &cur); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if !cur.InFlight || cur.Owner != owner {
			return nil
		}
		return txn.Delete([]byte(prefixIdem + key))
	})
}

// lease is a stored lease: its owner and when it ends (Unix nanoseconds).
type lease struct {
	Owner string `json:"owner"`
	Until int64  `json:"until"`
}

func (b *Badger) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	held := false
	err := b.updateVolatile(ctx, func(txn *badger.Txn) error {
		held = false
		var cur lease
		if err := txnGetJSON(txn, prefixLease+name, &cur); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if cur.Owner != "" && cur.Owner != owner && cur.Until > now.UnixNano() {
			return errNothingToWrite
		}
		held = true
		return setJSON(txn, prefixLease+name, lease{Owner: owner, Until: now.Add(ttl).UnixNano()}, ttl+time.Minute)
	})
	return held, err
}

func (b *Badger) RenewLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) error {
	return b.updateVolatile(ctx, func(txn *badger.Txn) error {
		var cur lease
		if err := txnGetJSON(txn, prefixLease+name, &cur); errors.Is(err, ErrNotFound) {
			return ErrLeaseLost
		} else if err != nil {
			return err
		}
		if cur.Owner != owner || cur.Until <= now.UnixNano() {
			return ErrLeaseLost
		}
		return setJSON(txn, prefixLease+name, lease{Owner: owner, Until: now.Add(ttl).UnixNano()}, ttl+time.Minute)
	})
}

// RenewLeases renews the leases in one transaction.
func (b *Badger) RenewLeases(ctx context.Context, names []string, owner string, now time.Time, ttl time.Duration) ([]int, error) {
	var lost []int
	err := b.updateVolatile(ctx, func(txn *badger.Txn) error {
		lost = lost[:0]
		for i, name := range names {
			var cur lease
			if err := txnGetJSON(txn, prefixLease+name, &cur); errors.Is(err, ErrNotFound) {
				lost = append(lost, i)
				continue
			} else if err != nil {
				return err
			}
			if cur.Owner != owner || cur.Until <= now.UnixNano() {
				lost = append(lost, i)
				continue
			}
			if err := setJSON(txn, prefixLease+name, lease{Owner: owner, Until: now.Add(ttl).UnixNano()}, ttl+time.Minute); err != nil {
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
	return b.updateVolatile(ctx, func(txn *badger.Txn) error {
		var cur lease
		if err := txnGetJSON(txn, prefixLease+name, &cur); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if cur.Owner != owner {
			return nil
		}
		return txn.Delete([]byte(prefixLease + name))
	})
}

// AllowRate keeps windows in this process's memory: Badger serves one process.
func (b *Badger) AllowRate(_ context.Context, name string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	ok, wait := b.rates.allow(name, limit, window, now)
	return ok, wait, nil
}

func (b *Badger) SettingOnce(ctx context.Context, name string, val []byte) ([]byte, error) {
	var stored []byte
	err := b.update(ctx, func(txn *badger.Txn) error {
		cur, err := txnGet(txn, prefixSetting+name)
		if err == nil {
			stored = cur
			return errNothingToWrite
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		stored = val
		return txn.SetEntry(entry(prefixSetting+name, val, 0))
	})
	return stored, err
}
