package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// The ledger on Redis: each operation is one script (redis_ledger_scripts.go), so that any
// number of gateway processes share balances, holds and budgets exactly. Writes wait for the
// replicas as the other durable writes do; one that too few replicas confirmed is not taken
// back (see Ledger: a hold is then released by the reconciler at its deadline).

// redisEntry is a ledger entry as the scripts write it.
type redisEntry struct {
	ID      string `json:"id"`
	Time    int64  `json:"t,string"`
	Account string `json:"ac"`
	KeyID   string `json:"k"`
	Model   string `json:"m"`
	Ref     string `json:"r"`
	HoldID  string `json:"hd"`
	Kind    string `json:"kd"`
	Amount  int64  `json:"am,string"`
	After   int64  `json:"ba,string"`
	Charged int64  `json:"ch,string"`
	Note    string `json:"no"`
}

func decodeRedisEntry(js string) (LedgerEntry, error) {
	var e redisEntry
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		return LedgerEntry{}, fmt.Errorf("redis store: decoding a ledger entry: %v", err)
	}
	return LedgerEntry{ID: e.ID, Time: time.UnixMicro(e.Time).UTC(), Account: e.Account, KeyID: e.KeyID,
		Model: e.Model, Ref: e.Ref, HoldID: e.HoldID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.After,
		Charged: e.Charged, Note: e.Note}, nil
}

// decodeRedisHold reads a hold from its written JSON and its state, bound and ref fields, and
// the reconciled mark when vals has a fifth.
func decodeRedisHold(vals []rueidis.RedisMessage) (Hold, error) {
	if len(vals) < 4 {
		return Hold{}, errScript
	}
	var fields [5]string
	for i := range min(len(vals), len(fields)) {
		s, err := vals[i].ToString()
		if err != nil && !isNil(err) {
			return Hold{}, err
		}
		fields[i] = s
	}
	var h Hold
	if err := json.Unmarshal([]byte(fields[0]), &h); err != nil {
		return Hold{}, fmt.Errorf("redis store: decoding a hold: %v", err)
	}
	h.State, h.Bound, h.Ref, h.Reconciled = fields[1], fields[2] == "1", fields[3], fields[4] == "1"
	return h, nil
}

func (r *Redis) Hold(ctx context.Context, h Hold, now time.Time) (Hold, LedgerEntry, error) {
	if err := validHold(&h); err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	h.Created, h.State = now.UTC(), HoldOpen
	js, err := json.Marshal(h)
	if err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	period, end := budgetPeriod(h.Budget.Period, now)
	ttl := "0" // a budget without a period never expires
	if !end.IsZero() {
		ttl = millis(end.Sub(now) + budgetKeep)
	}
	bound := ""
	if h.Bound {
		bound = "1"
	}
	keys := []string{r.key("lh:", h.ID), r.key("lb:", h.Account), r.key("le:", h.Account), r.key("lo"), r.key("lk:", h.KeyID, "\x00", period)}
	args := []string{string(js), h.Account, h.KeyID, h.Model, h.Ref, h.ID, itoa(h.Amount), itoa(micros(now)),
		itoa(micros(h.Deadline)), bound, itoa(h.Budget.Limit), ttl, itoa(MaxAmount)}
	res, unconfirmed := r.execDurable(ctx, scriptLedgerHold, keys, args)
	vals, err := res.ToArray()
	if err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	if len(vals) == 0 {
		return Hold{}, LedgerEntry{}, errScript
	}
	code, err := vals[0].AsInt64()
	if err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	switch {
	case code == -1:
		return Hold{}, LedgerEntry{}, ErrInsufficient
	case code == -2:
		return Hold{}, LedgerEntry{}, ErrBudgetExceeded
	case code == 1 && len(vals) == 2:
		e, err := entryOf(vals[1])
		if err != nil {
			return Hold{}, LedgerEntry{}, err
		}
		return h, e, unconfirmed
	case code == 0 && len(vals) == 8:
		// The hold there, as it now stands: with the reconciler's mark, and the deadline
		// RenewHold may have moved.
		held, err := decodeRedisHold(vals[1:6])
		if err == nil {
			held, err = renewedDeadline(held, vals[7])
		}
		if err != nil {
			return Hold{}, LedgerEntry{}, err
		}
		e, err := entryOf(vals[6])
		return held, e, err
	}
	return Hold{}, LedgerEntry{}, errScript
}

func entryOf(v rueidis.RedisMessage) (LedgerEntry, error) {
	js, err := v.ToString()
	if err != nil {
		return LedgerEntry{}, err
	}
	return decodeRedisEntry(js)
}

func (r *Redis) Settle(ctx context.Context, holdID string, amount int64, now time.Time) (LedgerEntry, error) {
	if err := validCharge(amount); err != nil {
		return LedgerEntry{}, err
	}
	return r.endHold(ctx, holdID, amount, EntrySettle, "", now, false)
}

func (r *Redis) Release(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error) {
	return r.endHold(ctx, holdID, 0, EntryRelease, reason, now, false)
}

func (r *Redis) ReleaseOverdue(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error) {
	return r.endHold(ctx, holdID, 0, EntryRelease, reason, now, true)
}

// endHold settles (charging charged) or releases an open hold; when unboundOnly (the
// reconciler's release), a hold bound to a task (ErrHoldBound) or not yet past its deadline
// (ErrHoldNotDue) is left open.
func (r *Redis) endHold(ctx context.Context, holdID string, charged int64, kind, note string, now time.Time, unboundOnly bool) (LedgerEntry, error) {
	res, unconfirmed := r.execDurable(ctx, scriptLedgerEnd, []string{r.key("lh:", holdID), r.key("lo")},
		[]string{itoa(charged), itoa(micros(now)), kind, note, r.prefix, holdID, flag(unboundOnly), itoa(MaxAmount)})
	vals, err := res.ToArray()
	if err != nil {
		return LedgerEntry{}, err
	}
	if len(vals) == 0 {
		return LedgerEntry{}, errScript
	}
	code, err := vals[0].AsInt64()
	if err != nil {
		return LedgerEntry{}, err
	}
	switch {
	case code == -1:
		return LedgerEntry{}, ErrNotFound
	case code == -3:
		return LedgerEntry{}, ErrHoldEnded
	case code == -6:
		return LedgerEntry{}, ErrHoldReconciled
	case code == -4:
		return LedgerEntry{}, ErrHoldBound
	case code == -7:
		return LedgerEntry{}, ErrHoldNotDue
	case code == 1 && len(vals) == 2:
		e, err := entryOf(vals[1])
		if err != nil {
			return LedgerEntry{}, err
		}
		return e, unconfirmed
	}
	return LedgerEntry{}, errScript
}

// RenewHold moves the hold's deadline in its record (d) and on the reconciler's list (lo) in one
// script. The deadline in the hold's JSON (j) stays the one it was taken with; HoldByID,
// OverdueHolds and a repeated Hold report d when it is later (see renewedDeadline).
func (r *Redis) RenewHold(ctx context.Context, holdID string, deadline time.Time) error {
	res, unconfirmed := r.execDurable(ctx, scriptLedgerRenew, []string{r.key("lh:", holdID), r.key("lo")}, []string{holdID, itoa(micros(deadline))})
	return holdScriptAnswer(res, unconfirmed, ErrHoldBound)
}

func (r *Redis) BindHold(ctx context.Context, holdID, taskID string) error {
	res, unconfirmed := r.execDurable(ctx, scriptLedgerBind, []string{r.key("lh:", holdID), r.key("lo")}, []string{taskID, holdID})
	return holdScriptAnswer(res, unconfirmed, ErrConflict)
}

// holdScriptAnswer is the error of the answer of a script that changes a hold without ending it
// (bind, renew): 1 or 0 done (unconfirmed: the write may not have reached its replicas), -1 the
// hold is missing, -3 ended, -6 released by the reconciler, -4 bound (to another task): bound.
func holdScriptAnswer(res rueidis.RedisResult, unconfirmed, bound error) error {
	code, err := res.AsInt64()
	if err != nil {
		return err
	}
	switch code {
	case 1, 0:
		return unconfirmed
	case -1:
		return ErrNotFound
	case -3:
		return ErrHoldEnded
	case -6:
		return ErrHoldReconciled
	case -4:
		return bound
	}
	return errScript
}

// HoldByID reads the hold's record: its JSON, state, bound, ref, reconciled mark and deadline
// (d, which RenewHold moves).
func (r *Redis) HoldByID(ctx context.Context, holdID string) (Hold, error) {
	vals, err := r.client.Do(ctx, r.client.B().Hmget().Key(r.key("lh:", holdID)).Field("j", "s", "b", "r", "o", "d").Build()).ToArray()
	if err != nil {
		return Hold{}, err
	}
	if len(vals) != 6 || vals[0].IsNil() {
		return Hold{}, ErrNotFound
	}
	h, err := decodeRedisHold(vals[:5])
	if err != nil {
		return Hold{}, err
	}
	return renewedDeadline(h, vals[5])
}

// renewedDeadline is h with the deadline of its record's d field (microseconds) when that is
// later than the one in its JSON, the deadline it was taken with: RenewHold moves d (and the
// hold's place on the reconciler's list), not the JSON. An absent d leaves h as it is.
func renewedDeadline(h Hold, d rueidis.RedisMessage) (Hold, error) {
	s, err := d.ToString()
	if isNil(err) || (err == nil && s == "") {
		return h, nil
	}
	if err != nil {
		return Hold{}, err
	}
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Hold{}, fmt.Errorf("redis store: decoding a hold's deadline %q: %v", s, err)
	}
	if us > micros(h.Deadline) {
		h.Deadline = time.UnixMicro(us).UTC()
	}
	return h, nil
}

func (r *Redis) Credit(ctx context.Context, c Credit, now time.Time) (LedgerEntry, error) {
	if err := validCredit(c); err != nil {
		return LedgerEntry{}, err
	}
	keys := []string{r.key("lc:", c.Account, "\x00", c.IdempotencyKey), r.key("lb:", c.Account), r.key("le:", c.Account)}
	res, unconfirmed := r.execDurable(ctx, scriptLedgerCredit, keys, []string{itoa(c.Amount), itoa(micros(now)), c.Note, c.Account, itoa(MaxAmount)})
	vals, err := res.ToArray()
	if err != nil {
		return LedgerEntry{}, err
	}
	if len(vals) == 1 {
		if n, err := vals[0].AsInt64(); err == nil && n == -5 {
			return LedgerEntry{}, ErrBalanceBound
		}
	}
	if len(vals) != 2 {
		return LedgerEntry{}, errScript
	}
	e, err := entryOf(vals[1])
	if err != nil {
		return LedgerEntry{}, err
	}
	return e, unconfirmed
}

func (r *Redis) Balance(ctx context.Context, account string) (Balance, error) {
	vals, err := r.client.Do(ctx, r.client.B().Hmget().Key(r.key("lb:", account)).Field("a", "h", "l").Build()).ToArray()
	if err != nil {
		return Balance{}, err
	}
	if len(vals) != 3 {
		return Balance{}, errScript
	}
	bal := Balance{Account: account}
	for i, dst := range []*int64{&bal.Amount, &bal.Held} {
		if vals[i].IsNil() {
			continue
		}
		if *dst, err = vals[i].AsInt64(); err != nil {
			return Balance{}, err
		}
	}
	if !vals[2].IsNil() {
		l, err := vals[2].ToString()
		if err != nil {
			return Balance{}, err
		}
		bal.Limited = l == "1"
	}
	return bal, nil
}

func (r *Redis) LedgerPage(ctx context.Context, account, after string, limit int) ([]LedgerEntry, string, error) {
	var from int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", after)
		}
		from = n
	}
	limit = clampPage(limit)
	// One entry more than the page tells whether there are more.
	list, err := r.client.Do(ctx, r.client.B().Zrangebyscore().Key(r.key("le:", account)).Min("("+itoa(from)).Max("+inf").
		Limit(0, int64(limit)+1).Build()).AsStrSlice()
	if err != nil {
		return nil, "", err
	}
	return ledgerPageOf(list, limit)
}

func (r *Redis) OverdueHolds(ctx context.Context, now time.Time, limit int) ([]Hold, error) {
	if limit <= 0 {
		return nil, nil
	}
	vals, err := r.exec(ctx, scriptLedgerOverdue, []string{r.key("lo")}, []string{itoa(micros(now)), strconv.Itoa(limit), r.prefix}).ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals)%5 != 0 {
		return nil, errScript
	}
	holds := make([]Hold, 0, len(vals)/5)
	for i := 0; i < len(vals); i += 5 {
		h, err := decodeRedisHold(vals[i : i+4])
		if err == nil {
			h, err = renewedDeadline(h, vals[i+4])
		}
		if err != nil {
			return nil, err
		}
		holds = append(holds, h)
	}
	return holds, nil
}

func (r *Redis) LedgerPageNewest(ctx context.Context, account, before string, limit int) ([]LedgerEntry, string, error) {
	upper := "+inf"
	if before != "" {
		n, err := strconv.ParseInt(before, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", before)
		}
		upper = "(" + itoa(n)
	}
	limit = clampPage(limit)
	// One entry more than the page tells whether there are more.
	list, err := r.client.Do(ctx, r.client.B().Zrevrangebyscore().Key(r.key("le:", account)).Max(upper).Min("-inf").
		Limit(0, int64(limit)+1).Build()).AsStrSlice()
	if err != nil {
		return nil, "", err
	}
	return ledgerPageOf(list, limit)
}

// ledgerPageOf decodes the first limit entries of list (read with one more than limit, which
// tells whether there are more) and the cursor of the next page ("" when none is left).
func ledgerPageOf(list []string, limit int) ([]LedgerEntry, string, error) {
	entries := make([]LedgerEntry, 0, min(len(list), limit))
	for _, js := range list[:min(len(list), limit)] {
		e, err := decodeRedisEntry(js)
		if err != nil {
			return nil, "", err
		}
		entries = append(entries, e)
	}
	if len(list) <= limit {
		return entries, "", nil
	}
	return entries, entries[len(entries)-1].ID, nil
}

// Interface guards
var _ Ledger = (*Redis)(nil)
