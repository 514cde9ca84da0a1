package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// directoryCache holds decoded account and key records, read on every request and written
// rarely. A missing account is cached too (an account without a record is enabled); a missing key
// is not, so unknown keys cannot fill the cache. Every write raises gen under the lock; a fill
// stores what it read only if gen did not move since it started reading, so a fill that raced a
// write (a revoke) never puts the older record back.
type directoryCache struct {
	mu       sync.RWMutex
	gen      uint64
	accounts map[string]Account
	keys     map[string]APIKey // by hash
}

func (c *directoryCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *directoryCache) account(name string) (Account, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.accounts[name]
	return a, ok
}

func (c *directoryCache) key(hash string) (APIKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[hash]
	return k, ok
}

// fill stores what a read that started at generation gen found, unless a write came since.
func (c *directoryCache) fill(gen uint64, set func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		set()
	}
}

// changed applies a committed write to the cache.
func (c *directoryCache) changed(set func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	set()
}

func (c *directoryCache) setAccount(a Account) {
	if c.accounts == nil {
		c.accounts = map[string]Account{}
	}
	c.accounts[a.Name] = a
}

func (c *directoryCache) setKey(k APIKey) {
	if c.keys == nil {
		c.keys = map[string]APIKey{}
	}
	c.keys[k.Hash] = k
}

// bumpDirectory raises the directory version inside a write transaction.
func bumpDirectory(txn *badger.Txn) error {
	v, err := txnUint(txn, keyDirectoryVer)
	if err != nil {
		return err
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v+1)
	return txn.Set([]byte(keyDirectoryVer), buf[:])
}

func txnUint(txn *badger.Txn, key string) (uint64, error) {
	raw, err := txnGet(txn, key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil || len(raw) != 8 {
		return 0, errors.Join(err, errors.New("corrupt counter "+key))
	}
	return binary.BigEndian.Uint64(raw), nil
}

func (b *Badger) CreateKey(ctx context.Context, key APIKey) (APIKey, error) {
	key.Version = 1
	err := b.update(ctx, func(txn *badger.Txn) error {
		if _, err := txnGet(txn, prefixKeyID+key.ID); err == nil {
			return ErrExists
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if _, err := txnGet(txn, prefixKey+key.Hash); err == nil {
			return ErrExists
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := setJSON(txn, prefixKey+key.Hash, key, 0); err != nil {
			return err
		}
		if err := txn.Set([]byte(prefixKeyID+key.ID), []byte(key.Hash)); err != nil {
			return err
		}
		if err := indexKey(txn, key); err != nil {
			return err
		}
		return bumpDirectory(txn)
	})
	if err != nil {
		return APIKey{}, err
	}
	b.cache.changed(func() { b.cache.setKey(key) })
	return key, nil
}

func (b *Badger) UpdateKey(ctx context.Context, key APIKey) (APIKey, error) {
	want := key.Version
	err := b.update(ctx, func(txn *badger.Txn) error {
		var cur APIKey
		if err := txnGetJSON(txn, prefixKey+key.Hash, &cur); err != nil {
			return err
		}
		if cur.ID != key.ID {
			return ErrNotFound
		}
		if cur.Version != want {
			return ErrConflict
		}
		key.Version = want + 1
		if err := setJSON(txn, prefixKey+key.Hash, key, 0); err != nil {
			return err
		}
		if cur.Account != key.Account {
			if err := txn.Delete(keyOfAccountKey(cur.Account, key.ID)); err != nil {
				return err
			}
			if err := indexKey(txn, key); err != nil {
				return err
			}
		}
		return bumpDirectory(txn)
	})
	if err != nil {
		return APIKey{}, err
	}
	b.cache.changed(func() { b.cache.setKey(key) })
	return key, nil
}

func (b *Badger) DeleteKey(ctx context.Context, id string) error {
	var hash []byte
	err := b.update(ctx, func(txn *badger.Txn) error {
		var err error
		if hash, err = txnGet(txn, prefixKeyID+id); err != nil {
			return err
		}
		var cur APIKey
		if err := txnGetJSON(txn, prefixKey+string(hash), &cur); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := txn.Delete(keyOfAccountKey(cur.Account, id)); err != nil {
			return err
		}
		if err := txn.Delete([]byte(prefixKeyID + id)); err != nil {
			return err
		}
		if err := txn.Delete([]byte(prefixKey + string(hash))); err != nil {
			return err
		}
		return bumpDirectory(txn)
	})
	if err == nil {
		b.cache.changed(func() { delete(b.cache.keys, string(hash)) })
	}
	return err
}

func (b *Badger) KeyByHash(_ context.Context, hash string) (APIKey, error) {
	if k, ok := b.cache.key(hash); ok {
		return k, nil
	}
	gen := b.cache.generation()
	var k APIKey
	if err := b.getJSON(prefixKey+hash, &k); err != nil {
		return k, err
	}
	if b.fillHook != nil {
		b.fillHook()
	}
	b.cache.fill(gen, func() { b.cache.setKey(k) })
	return k, nil
}

func (b *Badger) KeyByID(_ context.Context, id string) (APIKey, error) {
	var k APIKey
	err := b.db.View(func(txn *badger.Txn) error {
		hash, err := txnGet(txn, prefixKeyID+id)
		if err != nil {
			return err
		}
		return txnGetJSON(txn, prefixKey+string(hash), &k)
	})
	return k, err
}

func (b *Badger) ListKeys(context.Context) ([]APIKey, error) {
	keys := []APIKey{}
	err := b.db.View(func(txn *badger.Txn) error {
		return scan(txn, prefixKeyID, func(_, hash []byte) error {
			var k APIKey
			if err := txnGetJSON(txn, prefixKey+string(hash), &k); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if k.ID != "" {
				keys = append(keys, k)
			}
			return nil
		})
	})
	return keys, err
}

func (b *Badger) SaveAccount(ctx context.Context, acct Account) (Account, error) {
	want := acct.Version
	err := b.update(ctx, func(txn *badger.Txn) error {
		var cur Account
		if err := txnGetJSON(txn, prefixAccount+acct.Name, &cur); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if cur.Version != want {
			return ErrConflict
		}
		acct.Version = want + 1
		if err := setJSON(txn, prefixAccount+acct.Name, acct, 0); err != nil {
			return err
		}
		if err := txn.Set([]byte(prefixAccountName+acct.Name), nil); err != nil {
			return err
		}
		return bumpDirectory(txn)
	})
	if err != nil {
		return Account{}, err
	}
	b.cache.changed(func() { b.cache.setAccount(acct) })
	return acct, nil
}

func (b *Badger) Account(_ context.Context, name string) (Account, error) {
	a, ok := b.cache.account(name)
	if !ok {
		gen := b.cache.generation()
		// Read into its own variable: one whose address reaches json.Unmarshal lives on the
		// heap, and a would then be allocated on every call, the cached ones too (every
		// authenticated request makes one).
		var stored Account
		err := b.getJSON(prefixAccount+name, &stored)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return stored, err
		}
		a = stored
		if b.fillHook != nil {
			b.fillHook()
		}
		// A missing record is cached as the zero Account.
		b.cache.fill(gen, func() {
			if b.cache.accounts == nil {
				b.cache.accounts = map[string]Account{}
			}
			b.cache.accounts[name] = a
		})
	}
	if a.Name == "" {
		return Account{}, ErrNotFound
	}
	return a, nil
}

func (b *Badger) ListAccounts(context.Context) ([]Account, error) {
	accounts := []Account{}
	err := b.db.View(func(txn *badger.Txn) error {
		return scan(txn, prefixAccount, func(_, val []byte) error {
			var a Account
			if err := json.Unmarshal(val, &a); err != nil {
				return err
			}
			accounts = append(accounts, a)
			return nil
		})
	})
	return accounts, err
}

func (b *Badger) DirectoryVersion(context.Context) (uint64, error) {
	var v uint64
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		v, err = txnUint(txn, keyDirectoryVer)
		return err
	})
	return v, err
}
