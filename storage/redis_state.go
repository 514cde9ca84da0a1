package storage

import (
	"context"
	"encoding/json"

	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// Key layout of the rest (after the prefix):
//
//	i:<key>   hash {o, f, j}: an idempotency record, its owner and whether it is in flight
//	l:<name>  hash {o, u}: a lease, its owner and until when it runs (Unix µs of the caller's clock)
//	c:<name>  integer: a counter
//	r:<name>  sorted set (or hash, above exactWindowUpTo): a rate window
//	s:<name>  string: a setting

func (r *Redis) BeginIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) (IdempotencyRecord, bool, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return IdempotencyRecord{}, false, err
	}
	keys := []string{r.key("i:", key)}
	res, unconfirmed := r.execDurable(ctx, scriptBeginIdempotent, keys, []string{rec.Owner, string(js), millis(ttl)})
	vals, err := res.ToArray()
	if err != nil {
		return IdempotencyRecord{}, false, err
	}
	if len(vals) == 0 {
		return IdempotencyRecord{}, false, errScript
	}
	began, err := vals[0].AsInt64()
	if err != nil {
		return IdempotencyRecord{}, false, err
	}
	if began == 1 {
		if unconfirmed != nil {
			// Not taken: a retry must run the request.
			r.takeBack(ctx, "idempotency key", scriptAbandonIdempotent, keys, []string{rec.Owner})
			return IdempotencyRecord{}, false, unconfirmed
		}
		return rec, true, nil
	}
	if len(vals) != 2 {
		return IdempotencyRecord{}, false, errScript
	}
	cur, err := vals[1].ToString()
	if err != nil {
		return IdempotencyRecord{}, false, err
	}
	var existing IdempotencyRecord
	if err := json.Unmarshal([]byte(cur), &existing); err != nil {
		return IdempotencyRecord{}, false, fmt.Errorf("redis store: decoding idempotency record: %v", err)
	}
	return existing, false, nil
}

func (r *Redis) CompleteIdempotent(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error {
	rec.InFlight = false
	js, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// Too few replicas leave the answer stored on the master alone: it is not taken back, as the
	// answer has been sent, and a failover at worst leaves the key in flight until it expires.
	res, unconfirmed := r.execDurable(ctx, scriptCompleteIdempotent, []string{r.key("i:", key)},
		[]string{rec.Owner, string(js), millis(ttl)})
	n, err := res.AsInt64()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrConflict
	}
	return unconfirmed
}

func (r *Redis) AbandonIdempotent(ctx context.Context, key, owner string) error {
	return r.exec(ctx, scriptAbandonIdempotent, []string{r.key("i:", key)}, []string{owner}).Error()
}

func (r *Redis) RenewIdempotent(ctx context.Context, key, owner string, ttl time.Duration) error {
	n, err := r.execInt(ctx, scriptRenewIdempotent, []string{r.key("i:", key)}, []string{owner, millis(ttl)})
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrConflict
	}
	return nil
}

// leaseRecordTTL keeps a lease record a minute past its end on the server's clock; the lease
// itself ends by the callers' clock (the until field).
func leaseRecordTTL(ttl time.Duration) string { return millis(ttl + time.Minute) }

func (r *Redis) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	n, err := r.execInt(ctx, scriptAcquireLease, []string{r.key("l:", name)},
		[]string{owner, itoa(micros(now)), itoa(micros(now.Add(ttl))), leaseRecordTTL(ttl)})
	return n == 1, err
}

func (r *Redis) RenewLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) error {
	n, err := r.execInt(ctx, scriptRenewLease, []string{r.key("l:", name)},
		[]string{owner, itoa(micros(now)), itoa(micros(now.Add(ttl))), leaseRecordTTL(ttl)})
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrLeaseLost
	}
	return nil
}

// RenewLeases renews the leases with one script: one round trip however many there are.
func (r *Redis) RenewLeases(ctx context.Context, names []string, owner string, now time.Time, ttl time.Duration) ([]int, error) {
	if len(names) == 0 {
		return nil, nil
	}
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = r.key("l:", name)
	}
	lost, err := r.exec(ctx, scriptRenewLeases, keys,
		[]string{owner, itoa(micros(now)), itoa(micros(now.Add(ttl))), leaseRecordTTL(ttl)}).AsIntSlice()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(lost))
	for i, n := range lost {
		if n < 0 || n >= int64(len(names)) {
			return nil, errScript
		}
		out[i] = int(n)
	}
	return out, nil
}

func (r *Redis) ReleaseLease(ctx context.Context, name, owner string) error {
	return r.exec(ctx, scriptReleaseLease, []string{r.key("l:", name)}, []string{owner}).Error()
}

// AddCounter is a durable write: with WaitReplicas set, a charge (delta > 0) that too few
// replicas confirm is taken back and the call fails. A give-back (delta < 0: a refund, a slot
// release) that too few replicas confirm stays and counts as done, with a warning: its callers
// cannot undo what it gives back for, and taking it back would lose it for certain, where keeping
// it loses it only to a failover before the replicas catch up.
func (r *Redis) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	keys := []string{r.key("c:", name)}
	res, unconfirmed := r.execDurable(ctx, scriptAddCounter, keys, []string{itoa(delta), itoa(limit)})
	vals, err := res.AsIntSlice()
	if err != nil {
		return 0, false, err
	}
	if len(vals) != 2 {
		return 0, false, errScript
	}
	if unconfirmed != nil && vals[1] == 1 {
		if delta < 0 {
			r.logger.Warn("a counter give-back is on the master alone: a failover before the replicas catch up loses it",
				zap.String("counter", name), zap.Int64("delta", delta), errField(unconfirmed))
			return vals[0], true, nil
		}
		r.takeBack(ctx, "counter", scriptAddCounter, keys, []string{itoa(-delta), "-1"})
		return 0, false, unconfirmed
	}
	return vals[0], vals[1] == 1, nil
}

// ReserveCounter is AddCounter without waiting for replicas: the durable write that confirms the
// reservation (the task record) waits for them, and WAIT covers every write the server applied
// before it, this reservation included.
func (r *Redis) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	vals, err := r.exec(ctx, scriptAddCounter, []string{r.key("c:", name)}, []string{itoa(delta), itoa(limit)}).AsIntSlice()
	if err != nil {
		return 0, false, err
	}
	if len(vals) != 2 {
		return 0, false, errScript
	}
	return vals[0], vals[1] == 1, nil
}

func (r *Redis) Counter(ctx context.Context, name string) (int64, error) {
	v, err := r.client.Do(ctx, r.client.B().Get().Key(r.key("c:", name)).Build()).AsInt64()
	if isNil(err) {
		return 0, nil
	}
	return v, err
}

// AllowRate keeps the window on the server, so that every process counts against one window.
func (r *Redis) AllowRate(ctx context.Context, name string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	limit = max(limit, 1)
	win := max(window.Microseconds(), 1)
	vals, err := r.exec(ctx, scriptAllowRate, []string{r.key("r:", name)},
		[]string{itoa(micros(now)), itoa(win), strconv.Itoa(limit), NewClaimToken(), strconv.Itoa(exactWindowUpTo)}).AsIntSlice()
	if err != nil {
		return false, 0, err
	}
	if len(vals) != 2 {
		return false, 0, errScript
	}
	return vals[0] == 1, time.Duration(vals[1]) * time.Microsecond, nil
}

func (r *Redis) SettingOnce(ctx context.Context, name string, val []byte) ([]byte, error) {
	// The script writes the setting it answers even when it was there already (the same value
	// again), so that the WAIT behind it confirms that value whoever stored it: a setting stored
	// by a call that too few replicas confirmed stays, and the next call confirms it or fails
	// too. (Answered as read, a retry would hand out a value a failover could still replace.)
	res, unconfirmed := r.execDurable(ctx, scriptSettingOnce, []string{r.key("s:", name)}, []string{string(val)})
	s, err := res.ToString()
	if err != nil {
		return nil, err
	}
	if unconfirmed != nil {
		return nil, unconfirmed
	}
	return []byte(s), nil
}

// millis formats a duration in whole milliseconds, at least 1, for PEXPIRE.
func millis(d time.Duration) string { return itoa(max(d.Milliseconds(), 1)) }
