package storage

import (
	"context"
	"time"
)

// MaxItemClaim bounds the ids of one ClaimItems or ItemOwners call.
const MaxItemClaim = 1024

// Items holds the owners of item ids: ids that an upstream reveals inside an answer about another
// object (the output items of a Responses answer: msg_…, rs_…, fc_…) and that a later request may
// name. They are many per answer and never listed, so they are not task records: each is a small
// record (the owner: the account, which a caller may qualify further, as the pass-through adds
// the model of the answer) that expires at a set time. The store compares owners as plain strings.
type Items interface {
	// ClaimItems records account as the owner of every id in ids that has no owner yet, in one
	// atomic, durable write, each record expiring at expiresAt (never less than a minute from
	// now). An id that is owned already keeps its owner and its expiry: a claim never takes an
	// id over. It returns the ids that another account owns (nil when there are none); the
	// others are then the account's. ids holds at most MaxItemClaim ids.
	ClaimItems(ctx context.Context, account string, ids []string, expiresAt time.Time) (taken []string, err error)
	// ItemOwners returns the accounts that own item ids, in one read: owners[i] is the owner of
	// ids[i], or "" when it has none (never claimed, or expired). ids holds at most
	// MaxItemClaim ids.
	ItemOwners(ctx context.Context, ids []string) (owners []string, err error)
}
