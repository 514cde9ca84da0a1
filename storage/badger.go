package storage

import (
	"context"
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
	prefixAccount   = "a/"  // a/<name> -> Account
	prefixTask      = "t/"  // t/<task id> -> Task
	prefixTaskIndex = "ta/" // ta/<account>\x00<created, 20 digits>/<task id> -> empty
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
	return b.putJSON(prefixKey+key.Hash, key, 0)
}

func (b *Badger) KeyByHash(_ context.Context, hash string) (APIKey, error) {
	var k APIKey
	return k, b.getJSON(prefixKey+hash, &k)
}

func (b *Badger) PutAccount(_ context.Context, acct Account) error {
	return b.putJSON(prefixAccount+acct.Name, acct, 0)
}

func (b *Badger) Account(_ context.Context, name string) (Account, error) {
	var a Account
	return a, b.getJSON(prefixAccount+name, &a)
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

// taskIndexKey orders one account's tasks by creation time.
func taskIndexKey(t Task) []byte {
	return fmt.Appendf(nil, "%s%s\x00%020d/%s", prefixTaskIndex, t.Account, t.CreatedAt, t.ID)
}

func (b *Badger) putJSON(key string, v any, ttl time.Duration) error {
	val, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.db.Update(func(txn *badger.Txn) error {
		e := badger.NewEntry([]byte(key), val)
		if ttl > 0 {
			e = e.WithTTL(ttl)
		}
		return txn.SetEntry(e)
	})
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
