package storage

import (
	"context"
	"errors"
	"time"
)

// errLedgerPending: the Redis ledger is being written (next commit); until then it refuses.
var errLedgerPending = errors.New("redis store: the ledger is not implemented yet")

func (r *Redis) Hold(context.Context, Hold, time.Time) (Hold, LedgerEntry, error) {
	return Hold{}, LedgerEntry{}, errLedgerPending
}
func (r *Redis) Settle(context.Context, string, int64, time.Time) (LedgerEntry, error) {
	return LedgerEntry{}, errLedgerPending
}
func (r *Redis) Release(context.Context, string, string, time.Time) (LedgerEntry, error) {
	return LedgerEntry{}, errLedgerPending
}
func (r *Redis) BindHold(context.Context, string, string) error { return errLedgerPending }
func (r *Redis) HoldByID(context.Context, string) (Hold, error) { return Hold{}, errLedgerPending }
func (r *Redis) Credit(context.Context, Credit, time.Time) (LedgerEntry, error) {
	return LedgerEntry{}, errLedgerPending
}
func (r *Redis) Balance(context.Context, string) (Balance, error) { return Balance{}, errLedgerPending }
func (r *Redis) LedgerPage(context.Context, string, string, int) ([]LedgerEntry, string, error) {
	return nil, "", errLedgerPending
}
func (r *Redis) OverdueHolds(context.Context, time.Time, int) ([]Hold, error) {
	return nil, errLedgerPending
}
