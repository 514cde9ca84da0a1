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

// Key layout inside Badger.
const (
	prefixKey        = "k/"  // k/<sha256 hex> -> APIKey
	prefixKeyID      = "ki/" // ki/<key id> -> sha256 hex
	prefixAccount    = "a/"  // a/<name> -> Account
	keyDirectoryVer  = "dv"  // -> uint64, raised by every key or account write
	prefixCounter    = "c/"  // c/<name> -> int64 (8 bytes, big endian)
	prefixTask       = "t/"  // t/<task id> -> task record (badger_task_record.go)
	prefixTaskIndex  = "ta/" // ta/<account>\x00<created, 20 digits>/<task id> -> empty
	prefixOpenTask   = "tu/" // tu/<task id> -> empty, while the task is unfinished
	prefixRelay      = "rt/" // rt/<token sha256> -> task id
	prefixKeyedTask  = "tk/" // tk/<idempotency key> -> task id: the create that made a video task (Task.IdempotencyKey)
	prefixIdem       = "i/"  // i/<key> -> IdempotencyRecord
	prefixEvent      = "o/"  // o/<event id> -> Event
	prefixEventDue   = "od/" // od/<due, 20 digits>/<event id> -> empty
	prefixLease      = "l/"  // l/<name> -> lease
	prefixSetting    = "s/"  // s/<name> -> value
	prefixBalance    = "lb/" // lb/<account> -> balanceRecord
	prefixEntry      = "le/" // le/<account>\x00<number of its last entry, 20 digits> -> a block of entries (badger_ledger_block.go)
	prefixHold       = "lh/" // lh/<hold id> -> holdRecord
	prefixOpenHold   = "lo/" // lo/<deadline µs, 20 digits>/<hold id> -> empty, while open and unbound
	prefixBudget     = "lk/" // lk/<key id>\x00<period> -> int64 spent (8 bytes, big endian)
	prefixCreditKey  = "lc/" // lc/<account>\x00<idempotency key> -> LedgerEntry
	maxTxnRetries    = 1000
	minTaskRecordTTL = time.Minute
)

// BadgerOptions tune the embedded store.
type BadgerOptions struct {
	// Logger receives Badger's own warnings and errors.
	Logger *zap.Logger
	// Now is the clock that dates a record's finish (Task.FinishedAt) and from which its time to
	// live is counted: a record is kept Expiry − Now from its write (at least a minute). Badger
	// itself drops expired entries by the real clock. Default: time.Now.
	Now func() time.Time
}

// Badger is the embedded Store. Badger locks its directory, so open it once per directory per
// process and share it (mediagw does this through a caddy.UsagePool). Being the only process,
// it keeps key and account records and rate windows in memory.
//
// Writes are acknowledged only after they are synced to disk, but concurrent writers share one
// sync: Badger writes without syncing, and each writer then waits for a sync that started after
// its commit (group commit), done by logSync without holding Badger's locks.
type Badger struct {
	db       *badger.DB
	stopGC   chan struct{}
	gcDone   sync.WaitGroup
	sync     groupSync
	logs     *logSync
	cache    directoryCache
	rates    rateWindows
	counters counterCache
	ledger   ledgerBook
	creates  taskCreates
	reads    readLogs
	// commits counts the durable commits in progress, for Close.
	commits commitGate
	// lazy schedules the disk syncs of lazy commits (the ledger's).
	lazy lazySync
	// afterWrite, when set (tests), runs after a durable commit's write, before its sync.
	afterWrite func()
	// fillHook, when set (tests), runs between a cache fill's read and its store into the cache.
	fillHook func()
	// now is BadgerOptions.Now.
	now func() time.Time
}

// memTableSize is the size of Badger's memtables. A task is read back (by the watcher, by a
// client polling it) seconds after its create, and a memtable holding those seconds answers
// from memory instead of looking through level-0 tables; fewer memtables also mean fewer
// flushes and compactions. The price is memory: a memtable's arena is Go heap (which also raises
// the GC's target), and two memtables with their mapped logs are live while one is written to a
// table. 32 MiB makes a create cheaper than 16 or 8 MiB for some tens of MiB of RSS under load,
// idle RSS unchanged; the figures, and the benchmarks that measure them
// (BenchmarkBadgerCreateAndRefresh, bench/phases.sh), are in bench/README.md.
const memTableSize = 32 << 20

// Badger's other options, chosen by the cost of a task create (BenchmarkBadgerCreateTask and
// BenchmarkBadgerCreateAndRefresh, paired runs):
//   - Tables stay Snappy-compressed, read through a small block cache. Uncompressed tables (no
//     block cache needed: blocks are read from the mapped file) took 4 to 8 times the disk (148
//     to 295 instead of 37 bytes of table per create) and did not make a create cheaper: a
//     memtable written out is that much more to copy into its table file, for saving the
//     compression (about 3 % of the benchmark's CPU time).
//   - Badger's own metrics are off: they are expvar counters (published under /debug/vars,
//     where nothing of mediagw reads them) updated on every read, write and table lookup.
//
// Measured again for a priced pass-through request (a transient hold and its settlement, with
// Badger's flushes and compactions: BenchmarkBadgerOptions, interleaved runs on a loaded host;
// session 11 in bench/README.md), none was better than the runs' noise (about ±10 µs of 50):
//   - Uncompressed tables: 48 to 72 µs per request against 48 to 58, for 324 instead of 96
//     bytes of table per request.
//   - Memtables of 48 or 64 MiB: 42 to 63 µs, lower than 32 MiB's in five runs of seven, for
//     60 to 200 MiB more peak RSS; 16 MiB: 46 to 59 µs. Blocks of 16 KiB and no bloom filters:
//     46 to 64 µs.
//   - Conflict detection stays on: update's transactions are compare-and-set through it (a
//     read key written by a concurrent commit fails the commit, which runs again); with it off
//     the conformance suite's races (TaskFinishedOnce, ItemClaimRace, OutboxTwoClaimers, …)
//     find two winners.
//   - Badger refuses fewer than two compactors.

// OpenBadger opens (creating if needed) the store in dir. It is tuned for a gateway: small
// memtables and caches, and value-log garbage collection on a timer, so an idle gateway stays
// small.
func OpenBadger(dir string, o BadgerOptions) (*Badger, error) {
	return openBadger(dir, o, nil)
}

// badgerOptions are the Badger options OpenBadger opens dir with (see memTableSize and the notes
// above OpenBadger).
func badgerOptions(dir string, logger *zap.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(false). // synced by groupSync before each write is acknowledged
		WithLogger(badgerLogger{logger.Sugar()}).
		WithMemTableSize(memTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithMetricsEnabled(false).
		WithValueLogFileSize(64 << 20).
		WithValueThreshold(valueThreshold).
		WithNumCompactors(2).
		WithCompactL0OnClose(false)
}

// openBadger is OpenBadger with badgerOptions changed by tune when it is not nil (benchmarks of
// other options).
func openBadger(dir string, o BadgerOptions, tune func(badger.Options) badger.Options) (*Badger, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	opts := badgerOptions(dir, o.Logger)
	if tune != nil {
		opts = tune(opts)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("opening badger store at %s: %w", dir, err)
	}
	if err := migrateLegacy(db); err != nil {
		return nil, errors.Join(fmt.Errorf("migrating the records of an earlier version in %s: %w", dir, err), db.Close())
	}
	if err := indexDirectory(db); err != nil {
		return nil, errors.Join(fmt.Errorf("indexing the keys and accounts in %s: %w", dir, err), db.Close())
	}
	b := &Badger{db: db, stopGC: make(chan struct{}), logs: newLogSync(db, dir), counters: counterCache{mu: make(chanMutex, 1), logger: o.Logger}, now: o.Now}
	if b.now == nil {
		b.now = time.Now
	}
	b.sync.sync = b.logs.sync
	b.creates.startTaskIDs(db, o.Logger)
	b.gcDone.Add(1)
	go b.collectGarbage(10 * time.Minute)
	return b, nil
}

// Close stops garbage collection, waits for the durable commits in progress to be synced
// (refusing new ones with badger.ErrDBClosed), and closes the database.
func (b *Badger) Close() error {
	b.commits.close()
	close(b.stopGC)
	b.gcDone.Wait()
	b.creates.closeTaskIDs()
	// The reservations no durable commit wrote: Badger's close writes its memtables out.
	ferr := b.flushCounters()
	err := errors.Join(ferr, b.db.Close())
	b.logs.close()
	return err
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

// errNothingToWrite, returned by an update function, ends the transaction without a commit or
// a sync: it decided to change nothing.
var errNothingToWrite = errors.New("nothing to write")

// update runs fn in a read-write transaction, again from the start when Badger reports a
// conflict with a concurrent transaction, and returns once the commit is on disk.
func (b *Badger) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	return b.commit(ctx, fn, true)
}

// updateVolatile is update without waiting for the disk sync, for records that need not
// survive a crash of the process: leases. Badger serves one process (it locks its directory),
// so every lease holder dies with the process, and a lease lost in the crash only lets the
// restarted process take that work at once, which is what it must do anyway.
func (b *Badger) updateVolatile(ctx context.Context, fn func(txn *badger.Txn) error) error {
	return b.commit(ctx, fn, false)
}

func (b *Badger) commit(ctx context.Context, fn func(txn *badger.Txn) error, durable bool) error {
	return b.commitSerial(ctx, fn, durable, nil)
}

// commitSerial is commit that, when serial is not nil, holds it over each attempt's
// transaction, from before it starts (so that it reads what the previous holder wrote and does
// not conflict with it) to its commit, and not over the wait for the disk sync, so that the
// transactions it serialises share one sync.
func (b *Badger) commitSerial(ctx context.Context, fn func(txn *badger.Txn) error, durable bool, serial sync.Locker) error {
	if durable {
		if !b.commits.enter() {
			return badger.ErrDBClosed
		}
		defer b.commits.leave()
	}
	for range maxTxnRetries {
		var covering *syncRound
		var txn *badger.Txn
		if serial != nil {
			serial.Lock()
		}
		var err error
		txn, err = b.updateTxn(fn, durable)
		if serial != nil {
			serial.Unlock()
		}
		// Only now, with the write in Badger's logs, may a sync count its big values as
		// written: a sync started before would leave them out.
		big := wroteBigValue(txn)
		if durable {
			covering = b.sync.end(big && err == nil)
		}
		if errors.Is(err, errNothingToWrite) {
			return nil
		}
		if errors.Is(err, badger.ErrConflict) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err == nil && !durable && big {
			// Only a sync told of it syncs the value log: a commit that did not wait for a
			// sync (a lazy one) would leave its value out of every later one.
			return b.syncSince(true)
		}
		if err != nil || !durable {
			return err
		}
		if b.afterWrite != nil {
			b.afterWrite()
		}
		if err := b.sync.wait(covering); err != nil {
			return &unsyncedError{err}
		}
		return nil
	}
	return fmt.Errorf("badger: %w", badger.ErrConflict)
}

// updateTxn runs fn in a new update transaction and commits it, as Badger's DB.Update does; a
// durable commit carries the counters' reservations (commitWithCounters). It returns the
// transaction (discarded), for wroteBigValue.
func (b *Badger) updateTxn(fn func(txn *badger.Txn) error, durable bool) (*badger.Txn, error) {
	if b.db.IsClosed() {
		return nil, badger.ErrDBClosed
	}
	txn := b.db.NewTransaction(true)
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return txn, err
	}
	if durable {
		return txn, b.commitWithCounters(txn)
	}
	return txn, txn.Commit()
}

// unsyncedError is the error of a commit that Badger made but whose disk sync failed: unless
// it is taken back, the write stays, and reaches the disk with a later sync.
type unsyncedError struct{ err error }

func (e *unsyncedError) Error() string {
	return "the write was made but its disk sync failed: " + e.err.Error()
}
func (e *unsyncedError) Unwrap() error { return e.err }

// isUnsynced reports whether err is a durable write's failed sync: the write was made, and
// reaches the disk, in log order, with the next sync that succeeds.
func isUnsynced(err error) bool {
	var u *unsyncedError
	return errors.As(err, &u)
}

// entry is a write of val under key that expires after ttl (0: never). A value of
// valueThreshold bytes or more goes to the value log, which the commit's sync must cover too:
// write it with setEntry.
func entry(key string, val []byte, ttl time.Duration) *badger.Entry {
	e := badger.NewEntry([]byte(key), val)
	if ttl > 0 {
		e = e.WithTTL(ttl)
	}
	return e
}

// bigValueTxns holds the transactions in progress that wrote a value of valueThreshold bytes
// or more (see setEntry); commit takes them out after the write.
var bigValueTxns sync.Map // *badger.Txn -> struct{}

// setEntry writes val under key in txn, expiring after ttl (0: never), noting a value that goes
// to the value log, so that the sync acknowledging the commit syncs the value log too.
func setEntry(txn *badger.Txn, key string, val []byte, ttl time.Duration) error {
	return setBadgerEntry(txn, entry(key, val, ttl))
}

// setBadgerEntry is setEntry of an entry made already.
func setBadgerEntry(txn *badger.Txn, e *badger.Entry) error {
	if len(e.Value) >= valueThreshold {
		bigValueTxns.Store(txn, struct{}{})
	}
	return txn.SetEntry(e)
}

// wroteBigValue reports whether txn, now committed or discarded, wrote a value to the value
// log, and forgets it.
func wroteBigValue(txn *badger.Txn) bool {
	if txn == nil {
		return false
	}
	_, big := bigValueTxns.LoadAndDelete(txn)
	return big
}

func setJSON(txn *badger.Txn, key string, v any, ttl time.Duration) error {
	val, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return setEntry(txn, key, val, ttl)
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

// scanKeys calls fn with every key under prefix, in key order, without reading values.
func scanKeys(txn *badger.Txn, prefix string, fn func(key []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = []byte(prefix)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := fn(it.Item().KeyCopy(nil)); err != nil {
			return err
		}
	}
	return nil
}

// errStop ends a scan early.
var errStop = errors.New("stop")

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
