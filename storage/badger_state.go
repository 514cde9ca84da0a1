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
		if _, err := ownInFlight(txn, key, rec.Owner); err != nil {
			return err
		}
		rec.InFlight = false
		return setJSON(txn, prefixIdem+key, rec, ttl)
	})
}

// ownInFlight is the in-flight record of key that owner holds, or ErrConflict when there is
// none (gone, completed, or another owner's).
func ownInFlight(txn *badger.Txn, key, owner string) (IdempotencyRecord, error) {
	var cur IdempotencyRecord
	if err := txnGetJSON(txn, prefixIdem+key, &cur); errors.Is(err, ErrNotFound) {
		return cur, ErrConflict
	} else if err != nil {
		return cur, err
	}
	if !cur.InFlight || cur.Owner != owner {
		return cur, ErrConflict
	}
	return cur, nil
}

func (b *Badger) RenewIdempotent(ctx context.Context, key, owner string, ttl time.Duration) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		cur, err := ownInFlight(txn, key, owner)
		if err != nil {
			return err
		}
		return setJSON(txn, prefixIdem+key, cur, ttl)
	})
}

func (b *Badger) AbandonIdempotent(ctx context.Context, key, owner string) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		switch _, err := ownInFlight(txn, key, owner); {
		case errors.Is(err, ErrConflict):
			return nil // not this owner's to free
		case err != nil:
			return err
		}
		return txn.Delete([]byte(prefixIdem + key))
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
		return setEntry(txn, prefixSetting+name, val, 0)
	})
	return stored, err
}
