package storage

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// spendable is Ledger.Spendable's decision on an account's balance and what its key held and
// was charged in the budget's period (spent).
func spendable(bal Balance, spent int64, budget Budget) error {
	switch {
	case bal.Limited && bal.Amount < 0:
		return ErrInsufficient
	case budget.Limit > 0 && spent > budget.Limit:
		return ErrBudgetExceeded
	}
	return nil
}

// Spendable reads the account's balance from the book (with its open transient holds, as
// Hold decides) and the key's budget counter, as a hold of 0 does (see spendable).
func (b *Badger) Spendable(ctx context.Context, account, keyID string, budget Budget, now time.Time) error {
	a, err := b.ledger.lockAccount(b.db, account)
	if err != nil {
		return err
	}
	bal := Balance{Amount: a.bal.Amount, Limited: a.bal.Limited}
	epoch := a.epoch.Load()
	a.mu.Unlock()
	if err := spendable(bal, 0, Budget{}); err != nil || budget.Limit <= 0 {
		return err
	}
	var buf [96]byte
	key, _ := appendBudgetCounter(buf[:0], keyID, budget.Period, now)
	c, err := b.ledger.budgets.lock(b.db, string(key), epoch)
	if err != nil {
		return err
	}
	spent := int64(0)
	if c.live() {
		spent = c.spent
	}
	b.ledger.budgets.mu.Unlock()
	return spendable(Balance{}, spent, budget)
}

// Spendable reads the account's balance hash and, with a budget, the key's budget counter, in
// one round trip (see spendable).
func (r *Redis) Spendable(ctx context.Context, account, keyID string, budget Budget, now time.Time) error {
	reads := rueidis.Commands{r.client.B().Hmget().Key(r.key("lb:", account)).Field("a", "l").Build()}
	if budget.Limit > 0 {
		period, _ := budgetPeriod(budget.Period, now)
		reads = append(reads, r.client.B().Get().Key(r.key("lk:", keyID, "\x00", period)).Build())
	}
	cmds := r.client.DoMulti(ctx, reads...)
	vals, err := cmds[0].ToArray()
	if err != nil {
		return err
	}
	if len(vals) != 2 {
		return errScript
	}
	var bal Balance
	if !vals[0].IsNil() {
		if bal.Amount, err = vals[0].AsInt64(); err != nil {
			return err
		}
	}
	if !vals[1].IsNil() {
		l, err := vals[1].ToString()
		if err != nil {
			return err
		}
		bal.Limited = l == "1"
	}
	spent := int64(0)
	if budget.Limit > 0 {
		if spent, err = cmds[1].AsInt64(); err != nil && !isNil(err) {
			return err
		}
	}
	return spendable(bal, spent, budget)
}
