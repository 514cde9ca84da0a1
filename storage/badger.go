package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// DefaultTaskRetention is how long task records are kept when nothing else is configured: the
// seven days for which the upstream keeps a task.
const DefaultTaskRetention = 7 * 24 * time.Hour

// Key layout inside Badger.
const (
	prefixKey       = "k/"  // k/<sha256 hex> -> APIKey
	prefixKeyID     = "ki/" // ki/<key id> -> sha256 hex
	prefixCounter   = "c/"  // c/<name> -> int64 (8 bytes, big endian)
	prefixRecord    = "r/"  // r/<key> -> opaque record
	prefixAccount   = "a/"  // a/<name> -> Account
	prefixTask      = "t/"  // t/<task id> -> Task
	prefixTaskIndex = "ta/" // ta/<account>\x00<created, 20 digits>/<task id> -> empty
	prefixOpenTask  = "tu/" // tu/<task id> -> empty, while the task is unfinished
)

// BadgerOptions tune the embedded store.
type BadgerOptions struct {
	// Logger receives Badger's own warnings and errors.
	Logger *zap.Logger
}

// Badger is the embedded Store. Badger locks its directory, so open it once per directory per
// process and share it (mediagw does this through a caddy.UsagePool).
type Badger struct {
	db     *badger.DB
	stopGC chan struct{}
	gcDone sync.WaitGroup
	// atomic serialises read-modify-write operations (counters, claims) within this process,
	// so they never conflict.
	atomic sync.Mutex
	// cache keeps account records and stored keys in memory: they are read on every request and
	// written rarely. Badger locks its directory, so this process is the only writer and every
	// write below updates the cache.
	cache readCache
}

// readCache holds decoded account and key records. A missing account is cached too (an account
// without a record is enabled); a missing key is not, so unknown keys cannot fill the cache.
type readCache struct {
	mu       sync.RWMutex
	accounts map[string]Account
	keys     map[string]APIKey // by hash
}

func (c *readCache) account(name string) (Account, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.accounts[name]
	return a, ok
}

func (c *readCache) key(hash string) (APIKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[hash]
	return k, ok
}

func (c *readCache) setAccount(name string, a Account) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accounts == nil {
		c.accounts = map[string]Account{}
	}
	c.accounts[name] = a
}

func (c *readCache) setKey(k APIKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = map[string]APIKey{}
	}
	c.keys[k.Hash] = k
}

func (c *readCache) dropKey(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, hash)
}

// OpenBadger opens (creating if needed) the store in dir. Writes are synced to disk before they
// return. It is tuned for a gateway: small memtables and caches, and value-log garbage collection
// on a timer, so an idle gateway stays small.
func OpenBadger(dir string, o BadgerOptions) (*Badger, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(badgerLogger{o.Logger.Sugar()}).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithCompactL0OnClose(false)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("opening badger store at %s: %w", dir, err)
	}
	b := &Badger{db: db, stopGC: make(chan struct{})}
	b.gcDone.Add(1)
	go b.collectGarbage(10 * time.Minute)
	return b, nil
}

// Close stops garbage collection and closes the database.
func (b *Badger) Close() error {
	close(b.stopGC)
	b.gcDone.Wait()
	return b.db.Close()
}

// collectGarbage rewrites value-log files that are mostly garbage, every interval.
func (b *Badger) collectGarbage(interval time.Duration) {
	defer b.gcDone.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.stopGC:
			return
		case <-t.C:
			for b.db.RunValueLogGC(0.5) == nil {
			}
		}
	}
}

func (b *Badger) PutKey(_ context.Context, key APIKey) error {
	val, err := json.Marshal(key)
	if err != nil {
		return err
	}
	err = b.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte(prefixKey+key.Hash), val); err != nil {
			return err
		}
		return txn.Set([]byte(prefixKeyID+key.ID), []byte(key.Hash))
	})
	if err == nil {
		b.cache.setKey(key)
	}
	return err
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

func (b *Badger) DeleteKey(_ context.Context, id string) error {
	var hash []byte
	err := b.db.Update(func(txn *badger.Txn) error {
		var err error
		if hash, err = txnGet(txn, prefixKeyID+id); err != nil {
			return err
		}
		if err := txn.Delete([]byte(prefixKeyID + id)); err != nil {
			return err
		}
		return txn.Delete([]byte(prefixKey + string(hash)))
	})
	if err == nil {
		b.cache.dropKey(string(hash))
	}
	return err
}

func (b *Badger) KeyByHash(_ context.Context, hash string) (APIKey, error) {
	if k, ok := b.cache.key(hash); ok {
		return k, nil
	}
	var k APIKey
	if err := b.getJSON(prefixKey+hash, &k); err != nil {
		return k, err
	}
	b.cache.setKey(k)
	return k, nil
}

func (b *Badger) PutAccount(_ context.Context, acct Account) error {
	err := b.putJSON(prefixAccount+acct.Name, acct, 0)
	if err == nil {
		b.cache.setAccount(acct.Name, acct)
	}
	return err
}

func (b *Badger) Account(_ context.Context, name string) (Account, error) {
	a, ok := b.cache.account(name)
	if !ok {
		err := b.getJSON(prefixAccount+name, &a)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return a, err
		}
		b.cache.setAccount(name, a) // a missing record is cached as the zero Account
	}
	if a.Name == "" {
		return a, ErrNotFound
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

func (b *Badger) AddCounter(_ context.Context, name string, delta, limit int64) (int64, bool, error) {
	b.atomic.Lock()
	defer b.atomic.Unlock()
	var value int64
	ok := true
	err := b.db.Update(func(txn *badger.Txn) error {
		cur, err := txnCounter(txn, name)
		if err != nil {
			return err
		}
		if limit >= 0 && cur+delta > limit && delta > 0 {
			value, ok = cur, false
			return nil
		}
		value = cur + delta
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(value))
		return txn.Set([]byte(prefixCounter+name), buf[:])
	})
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

func (b *Badger) Claim(_ context.Context, key string, val []byte, ttl time.Duration) ([]byte, bool, error) {
	b.atomic.Lock()
	defer b.atomic.Unlock()
	var existing []byte
	err := b.db.Update(func(txn *badger.Txn) error {
		cur, err := txnGet(txn, prefixRecord+key)
		if err == nil {
			existing = cur
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		return txn.SetEntry(entry(prefixRecord+key, val, ttl))
	})
	return existing, err == nil && existing == nil, err
}

func (b *Badger) PutRecord(_ context.Context, key string, val []byte, ttl time.Duration) error {
	return b.db.Update(func(txn *badger.Txn) error { return txn.SetEntry(entry(prefixRecord+key, val, ttl)) })
}

func (b *Badger) Record(_ context.Context, key string) ([]byte, error) {
	var val []byte
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		val, err = txnGet(txn, prefixRecord+key)
		return err
	})
	return val, err
}

func (b *Badger) DeleteRecord(_ context.Context, key string) error {
	return b.db.Update(func(txn *badger.Txn) error { return txn.Delete([]byte(prefixRecord + key)) })
}

func (b *Badger) ScanRecords(_ context.Context, prefix string, fn func(key string, val []byte) bool) error {
	stop := errors.New("stop")
	err := b.db.View(func(txn *badger.Txn) error {
		return scan(txn, prefixRecord+prefix, func(k, v []byte) error {
			if !fn(string(k[len(prefixRecord):]), v) {
				return stop
			}
			return nil
		})
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

func (b *Badger) PutTask(_ context.Context, task Task) error {
	ttl := max(time.Until(task.expiry()), time.Minute)
	val, err := json.Marshal(task)
	if err != nil {
		return err
	}
	return b.db.Update(func(txn *badger.Txn) error {
		if err := txn.SetEntry(badger.NewEntry([]byte(prefixTask+task.ID), val).WithTTL(ttl)); err != nil {
			return err
		}
		if task.Unfinished() {
			if err := txn.SetEntry(badger.NewEntry([]byte(prefixOpenTask+task.ID), nil).WithTTL(ttl)); err != nil {
				return err
			}
		} else if err := txn.Delete([]byte(prefixOpenTask + task.ID)); err != nil {
			return err
		}
		return txn.SetEntry(badger.NewEntry(taskIndexKey(task), nil).WithTTL(ttl))
	})
}

func (b *Badger) Task(_ context.Context, id string) (Task, error) {
	var t Task
	return t, b.getJSON(prefixTask+id, &t)
}

func (b *Badger) DeleteTask(_ context.Context, id string) error {
	return b.db.Update(func(txn *badger.Txn) error {
		var t Task
		if err := txnGetJSON(txn, prefixTask+id, &t); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if err := txn.Delete([]byte(prefixTask + id)); err != nil {
			return err
		}
		if err := txn.Delete([]byte(prefixOpenTask + id)); err != nil {
			return err
		}
		return txn.Delete(taskIndexKey(t))
	})
}

func (b *Badger) ListTasks(_ context.Context, account string, q TaskQuery) (TaskPage, error) {
	var page TaskPage
	q.PageNum, q.PageSize = max(q.PageNum, 1), max(q.PageSize, 1)
	skip := (q.PageNum - 1) * q.PageSize
	prefix := []byte(prefixTaskIndex + account + "\x00")
	err := b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Reverse = true
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(append(prefix, 0xff)); it.ValidForPrefix(prefix); it.Next() {
			key := it.Item().Key()
			id := string(key[len(prefix)+21:])
			var t Task
			if err := txnGetJSON(txn, prefixTask+id, &t); errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if !q.matches(t) {
				continue
			}
			if page.Total >= skip && len(page.Tasks) < q.PageSize {
				page.Tasks = append(page.Tasks, t)
			}
			page.Total++
		}
		return nil
	})
	return page, err
}

func (b *Badger) UnfinishedTasks(_ context.Context, fn func(id string) bool) error {
	stop := errors.New("stop")
	err := b.db.View(func(txn *badger.Txn) error {
		return scan(txn, prefixOpenTask, func(k, _ []byte) error {
			if !fn(string(k[len(prefixOpenTask):])) {
				return stop
			}
			return nil
		})
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

// taskIndexKey orders one account's tasks by creation time.
func taskIndexKey(t Task) []byte {
	return fmt.Appendf(nil, "%s%s\x00%020d/%s", prefixTaskIndex, t.Account, t.CreatedAt, t.ID)
}

func (b *Badger) putJSON(key string, v any, ttl time.Duration) error {
	val, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.db.Update(func(txn *badger.Txn) error { return txn.SetEntry(entry(key, val, ttl)) })
}

// entry is a write of val under key that expires after ttl (0: never).
func entry(key string, val []byte, ttl time.Duration) *badger.Entry {
	e := badger.NewEntry([]byte(key), val)
	if ttl > 0 {
		e = e.WithTTL(ttl)
	}
	return e
}

// scan calls fn with the key and value of every item under prefix, in key order.
func scan(txn *badger.Txn, prefix string, fn func(key, val []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		val, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if err := fn(item.KeyCopy(nil), val); err != nil {
			return err
		}
	}
	return nil
}

func txnGet(txn *badger.Txn, key string) ([]byte, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

func (b *Badger) getJSON(key string, v any) error {
	return b.db.View(func(txn *badger.Txn) error { return txnGetJSON(txn, key, v) })
}

func txnGetJSON(txn *badger.Txn, key string, v any) error {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return item.Value(func(val []byte) error { return json.Unmarshal(val, v) })
}

// badgerLogger sends Badger's log lines to zap; its Info and Debug chatter is dropped.
type badgerLogger struct{ l *zap.SugaredLogger }

func (l badgerLogger) Errorf(f string, a ...any)   { l.l.Errorf(f, a...) }
func (l badgerLogger) Warningf(f string, a ...any) { l.l.Warnf(f, a...) }
func (l badgerLogger) Infof(string, ...any)        {}
func (l badgerLogger) Debugf(string, ...any)       {}

// Interface guards
var (
	_ Store         = (*Badger)(nil)
	_ badger.Logger = badgerLogger{}
)
