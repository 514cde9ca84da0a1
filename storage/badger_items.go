package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// prefixItem is the key prefix of item owners: ri/<item id> -> account.
const prefixItem = "ri/"

// ClaimItems reads every id in one transaction and writes the unowned ones in the same one, so a
// claim that finds every id owned already (an answer read again) ends without a commit or a sync.
func (b *Badger) ClaimItems(ctx context.Context, account string, ids []string, expiresAt time.Time) ([]string, error) {
	if len(ids) > MaxItemClaim {
		return nil, fmt.Errorf("badger: %d item ids in one claim, more than %d", len(ids), MaxItemClaim)
	}
	var taken []string
	err := b.update(ctx, func(txn *badger.Txn) error {
		taken = taken[:0] // the function runs again after a conflict
		ttl := max(expiresAt.Sub(b.now()), minTaskRecordTTL)
		wrote := false
		for _, id := range ids {
			item, err := txn.Get([]byte(prefixItem + id))
			if errors.Is(err, badger.ErrKeyNotFound) {
				if err := setEntry(txn, prefixItem+id, []byte(account), ttl); err != nil {
					return err
				}
				wrote = true
				continue
			}
			if err != nil {
				return err
			}
			owner, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if string(owner) != account {
				taken = append(taken, id)
			}
		}
		if !wrote {
			return errNothingToWrite
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(taken) == 0 {
		return nil, nil
	}
	return taken, nil
}

func (b *Badger) ItemOwners(_ context.Context, ids []string) ([]string, error) {
	if len(ids) > MaxItemClaim {
		return nil, fmt.Errorf("badger: %d item ids in one read, more than %d", len(ids), MaxItemClaim)
	}
	owners := make([]string, len(ids))
	err := b.db.View(func(txn *badger.Txn) error {
		for i, id := range ids {
			item, err := txn.Get([]byte(prefixItem + id))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			owners[i] = string(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return owners, nil
}

// Interface guards
var _ Items = (*Badger)(nil)
