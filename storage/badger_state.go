package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

func (b *Badger) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, true)
}

// ReserveCounter does not wait for a disk sync: Badger's logs are written in order, and the sync
// that acknowledges the caller's next durable write covers every write committed before it.
func (b *Badger) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, false)
}

func (b *Badger) addCounter(ctx context.Context, name string, delta, limit int64, durable bool) (int64, bool, error) {
	var value int64
	ok := true
	err := b.commit(ctx, func(txn *badger.Txn) error {
		ok = true
		cur, err := txnCounter(txn, name)
		if err != nil {
			return err
		}
		if limit >= 0 && delta > 0 && cur+delta > limit {
			value, ok = cur, false
			return errNothingToWrite
		}
		value = cur + delta
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(value))
		return txn.Set([]byte(prefixCounter+name), buf[:])
	}, durable)
	return value, ok, err
}

func (b *Badger) Counter(_ context.Context, name string) (int64, error) {
	var v int64
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		v, err = txnCounter(txn, name)
		return err
	})
	return v, err
}

func txnCounter(txn *badger.Txn, name string) (int64, error) {
	raw, err := txnGet(txn, prefixCounter+name)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(raw) != 8 {
		return 0, fmt.Errorf("counter %s is corrupt", name)
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
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
