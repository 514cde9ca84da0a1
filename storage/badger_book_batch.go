package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The group commit of the ledger: the writes of the decisions the book makes are added, in
// the order they are made, to the open batch; one caller at a time (the first to wait, while
// no commit runs) writes the oldest batch in one Badger transaction, in which each account's
// balance record and each budget counter is written once, at the last value the batch holds.
// Every caller waits for the commit of the batch holding its writes, so that an answer is
// given only for what is in Badger's write-ahead log (which a killed process keeps). Batches
// that come while one is committed gather the operations of that time: under load one commit
// serves many requests.
//
// A batch that fails to commit fails every operation in it and in every batch after it (they
// were decided on its state), and raises the book's epoch: each account, hold and counter is
// then read again from Badger before its next use, so memory is never ahead of the disk.

// maxBatchWrites bounds the writes of one batch (Badger refuses a transaction past about a
// hundredth of its memtable's size in entries); a full batch is closed and a new one opened.
const maxBatchWrites = 4096

// errBatchFailed wraps the error of a failed batch, for every operation in it.
var errBatchFailed = errors.New("ledger: the batch holding this write was not committed")

// ledgerBatch is the writes of operations decided one after the other.
type ledgerBatch struct {
	writes []bookWrite
	// first and firstAcct are the entries, balances and operations of the batch's first
	// account, kept in the batch itself (a batch mostly carries one account's operations);
	// accounts those of each other account, made by the second.
	first     batchAccount
	firstAcct *bookAccount
	accounts  map[*bookAccount]*batchAccount
	// budgets are the counter values to write, the last of each.
	budgets map[string]budgetWrite
	// uses are the changes of each counter, to tell them when they are committed.
	uses map[*bookBudget]budgetUse
	// size counts the writes and entries, for maxBatchWrites.
	size int
	// ended are the holds this batch ends, to drop from memory once Badger has them.
	ended []*bookHold
	// lazy: an operation of the batch is acknowledged before its disk sync.
	lazy bool
	done chan struct{}
	err  error
}

// budgetUse is what a batch's operations did with one counter: n changes, which gave freed back.
type budgetUse struct{ n, freed int64 }

// batchAccount is what a batch writes of one account.
type batchAccount struct {
	// blocks are its entries, one Badger value per block (badger_ledger_block.go); the
	// first is kept in one, and blocks refers to it until a second is added.
	blocks []entryBlock
	one    [1]entryBlock
	// balance, when hasBalance, is the last balance record its operations made.
	balance    balanceRecord
	hasBalance bool
	// ops counts its operations, to tell them when they are committed; freed is what they
	// gave back to its balance (see bookAccount.freed).
	ops, freed int64
}

// addEntry adds the entry numbered n to the account's blocks: to the last one when n follows it
// and it has room (maxBlockEntries, maxBlockBytes), else to a new one.
func (ba *batchAccount) addEntry(e *LedgerEntry, n uint64) {
	if k := len(ba.blocks); k > 0 {
		if b := &ba.blocks[k-1]; b.n < maxBlockEntries && len(b.buf) < maxBlockBytes && b.last+1 == n {
			b.add(e, n)
			return
		}
	}
	if ba.blocks == nil {
		ba.blocks = ba.one[:0]
	}
	ba.blocks = append(ba.blocks, entryBlock{})
	ba.blocks[len(ba.blocks)-1].add(e, n)
}

// bookWrite is one key's write (a delete when del), expiring after ttl (0: never).
type bookWrite struct {
	key string
	val []byte
	del bool
	ttl time.Duration
}

// batchQueue holds the batches not yet committed, oldest first; the last one is open.
type batchQueue struct {
	mu      sync.Mutex
	batches []*ledgerBatch
	// inflight is the batch being committed, if any.
	inflight *ledgerBatch
	// failCommit, when set (tests), is called before a batch is written; an error fails it.
	failCommit func() error
}

// newBatch opens a batch. Its budgets and uses are made by the first operation with a budget
// counter (a key without a budget has none), and ended by the first end (with room for a few):
// a batch costs allocations by what it holds.
func newBatch() *ledgerBatch {
	return &ledgerBatch{done: make(chan struct{})}
}

// account is what the batch writes of the account a: made by a's first operation in it.
func (batch *ledgerBatch) account(a *bookAccount) *batchAccount {
	switch {
	case batch.firstAcct == a:
		return &batch.first
	case batch.firstAcct == nil:
		batch.firstAcct = a
		return &batch.first
	}
	ba := batch.accounts[a]
	if ba == nil {
		if batch.accounts == nil {
			batch.accounts = make(map[*bookAccount]*batchAccount)
		}
		ba = &batchAccount{}
		batch.accounts[a] = ba
	}
	return ba
}

// eachAccount calls f with each account of the batch and what the batch writes of it.
func (batch *ledgerBatch) eachAccount(f func(a *bookAccount, ba *batchAccount) error) error {
	if batch.firstAcct == nil {
		return nil
	}
	if err := f(batch.firstAcct, &batch.first); err != nil {
		return err
	}
	for a, ba := range batch.accounts {
		if err := f(a, ba); err != nil {
			return err
		}
	}
	return nil
}

// ledgerOp is the writes one decision makes, for the batch.
type ledgerOp struct {
	acct   *bookAccount
	writes []bookWrite
	// entries are the ledger entries it makes, numbered (bookAccount.record).
	entries  [2]numberedEntry
	nentries int
	// balance, when hasBalance, is the account's balance after the operation.
	balance    balanceRecord
	hasBalance bool
	// counter and budget are the budget counter's write, when budget is set.
	counter string
	budget  *bookBudget
	bw      budgetWrite
	ended   *bookHold
	lazy    bool
	// freed and budgetFreed are what the operation gave back to the account's balance and
	// to the counter (see bookAccount.freed); budgetFreed is counted in the counter already.
	freed, budgetFreed int64
}

// numberedEntry is an entry and its number in its account's ledger.
type numberedEntry struct {
	e LedgerEntry
	n uint64
}

// addEntry adds an entry to op; an operation makes at most two (a transient hold's end).
func (op *ledgerOp) addEntry(e LedgerEntry, n uint64) {
	op.entries[op.nentries] = numberedEntry{e: e, n: n}
	op.nentries++
}

// add puts op in the open batch, with op.acct locked, and returns the batch; it refuses an
// operation decided on state read before a failed batch (the account is then read again).
func (k *ledgerBook) add(op *ledgerOp) (*ledgerBatch, error) {
	q := &k.queue
	q.mu.Lock()
	if op.acct.epoch.Load() != k.epoch.Load()+1 {
		q.mu.Unlock()
		op.acct.stale()
		if op.budget != nil {
			k.budgets.committed(op.budget, 1, op.budgetFreed)
		}
		if op.ended != nil {
			// Its end is not written, as in a failed batch (finish): the hold leaves memory,
			// where nothing else would find it (it left its account's holds when its end was
			// decided), and is read again as Badger has it.
			k.ended(op.ended)
		}
		return nil, errBatchFailed
	}
	n := len(q.batches)
	size := len(op.writes) + op.nentries
	if n == 0 || q.batches[n-1].size+size+3 > maxBatchWrites {
		q.batches = append(q.batches, newBatch())
		n++
	}
	batch := q.batches[n-1]
	batch.size += size
	batch.writes = append(batch.writes, op.writes...)
	ba := batch.account(op.acct)
	for i := range op.nentries {
		ba.addEntry(&op.entries[i].e, op.entries[i].n)
	}
	if op.hasBalance {
		ba.balance, ba.hasBalance = op.balance, true
	}
	if op.budget != nil {
		if batch.budgets == nil {
			batch.budgets, batch.uses = make(map[string]budgetWrite), make(map[*bookBudget]budgetUse)
		}
		if prev, ok := batch.budgets[op.counter]; !ok || prev.version < op.bw.version {
			batch.budgets[op.counter] = op.bw
		}
		u := batch.uses[op.budget]
		batch.uses[op.budget] = budgetUse{n: u.n + 1, freed: u.freed + op.budgetFreed}
	}
	ba.ops++
	op.acct.pending.Add(1)
	if op.freed != 0 {
		ba.freed += op.freed
		op.acct.freed.Add(op.freed)
	}
	if op.ended != nil {
		if batch.ended == nil {
			batch.ended = make([]*bookHold, 0, 8)
		}
		batch.ended = append(batch.ended, op.ended)
	}
	batch.lazy = batch.lazy || op.lazy
	q.mu.Unlock()
	return batch, nil
}

// waitBatch returns once batch is committed (or failed), committing the oldest batch itself while
// no one else commits one; before it commits the open batch it yields once to the goroutines
// that can run.
func (b *Badger) waitBatch(batch *ledgerBatch) error {
	q := &b.ledger.queue
	yielded := false
	for {
		q.mu.Lock()
		select {
		case <-batch.done:
			q.mu.Unlock()
			return batch.err
		default:
		}
		if q.inflight != nil {
			inflight := q.inflight
			q.mu.Unlock()
			<-inflight.done
			continue
		}
		if len(q.batches) == 0 {
			// Not done, neither queued nor in flight: it failed with the batch before it,
			// and is being told so.
			q.mu.Unlock()
			<-batch.done
			return batch.err
		}
		if !yielded && len(q.batches) == 1 {
			// The oldest batch is the open one: let the goroutines that can run go first
			// (once), so that those about to end their holds join it. Badger's work is per
			// commit more than per operation (a priced pass-through request's share of its
			// commit fell from about 1/6 to 1/9 at 32 connections), and a goroutine that
			// can run is not waiting for anything that this commit would give it.
			yielded = true
			q.mu.Unlock()
			runtime.Gosched()
			continue
		}
		next := q.batches[0]
		q.batches = q.batches[1:]
		q.inflight = next
		failCommit := q.failCommit
		q.mu.Unlock()

		err := b.writeBatch(next, failCommit)
		var failed []*ledgerBatch
		q.mu.Lock()
		if err != nil {
			// Everything decided since was decided on what failed: fail it too, and read
			// every account again before its next use.
			b.ledger.epoch.Add(1)
			failed, q.batches = q.batches, nil
		}
		q.inflight = nil
		q.mu.Unlock()
		b.ledger.finish(next, err)
		for _, f := range failed {
			b.ledger.finish(f, err)
		}
		if err == nil && next.lazy {
			b.syncSoon()
		}
	}
}

// writeBatch writes the batch in one transaction. A batch that wrote a value to Badger's value
// log (an entry with a note of valueThreshold bytes or more) returns once a sync of the value
// log has ended: only a sync told of it syncs the value log (as for commitSerial's commits), and
// the callers of the batch are answered as soon as it returns.
func (b *Badger) writeBatch(batch *ledgerBatch, failCommit func() error) error {
	if !b.commits.enter() {
		return badger.ErrDBClosed
	}
	defer b.commits.leave()
	if failCommit != nil {
		if err := failCommit(); err != nil {
			return err
		}
	}
	txn := b.db.NewTransaction(true)
	defer txn.Discard()
	err := setBatch(txn, batch)
	if err == nil {
		err = b.commitWithCounters(txn)
	}
	if big := wroteBigValue(txn); big && err == nil {
		return b.syncSince(true)
	}
	return err
}

// setBatch sets the batch's writes in txn (with setBadgerEntry, which notes a value for the value
// log). The entries of the operations' writes and of the accounts' blocks and balances are made
// from one slice and their keys from one buffer: two allocations per batch, not two or three per
// write (a create makes five or more, every batch one block and one balance an account).
func setBatch(txn *badger.Txn, batch *ledgerBatch) error {
	keyBytes, n := 0, len(batch.writes)
	for _, w := range batch.writes {
		keyBytes += len(w.key)
	}
	_ = batch.eachAccount(func(a *bookAccount, ba *batchAccount) error {
		n += len(ba.blocks) + 1
		keyBytes += len(ba.blocks)*entryKeySize(a.name) + len(prefixBalance) + len(a.name)
		return nil
	})
	entries := make([]badger.Entry, n)
	keys := make([]byte, 0, keyBytes)
	// key is the key appended to keys from start.
	key := func(start int) []byte { return keys[start:len(keys):len(keys)] }
	now := time.Now()
	for i, w := range batch.writes {
		start := len(keys)
		keys = append(keys, w.key...)
		var err error
		if w.del {
			err = txn.Delete(key(start))
		} else {
			e := &entries[i]
			e.Key, e.Value = key(start), w.val
			if w.ttl > 0 {
				e.ExpiresAt = uint64(now.Add(w.ttl).Unix()) // as Badger's Entry.WithTTL
			}
			err = setBadgerEntry(txn, e)
		}
		if err != nil {
			return err
		}
	}
	next := entries[len(batch.writes):]
	err := batch.eachAccount(func(a *bookAccount, ba *batchAccount) error {
		for _, block := range ba.blocks {
			start := len(keys)
			keys = appendEntryKey(keys, a.name, block.last)
			next[0].Key, next[0].Value = key(start), block.buf
			if err := setBadgerEntry(txn, &next[0]); err != nil {
				return err
			}
			next = next[1:]
		}
		if !ba.hasBalance {
			return nil
		}
		start := len(keys)
		keys = append(append(keys, prefixBalance...), a.name...)
		next[0].Key, next[0].Value = key(start), ba.balance.encode()
		err := setBadgerEntry(txn, &next[0])
		next = next[1:]
		return err
	})
	if err != nil {
		return err
	}
	for counter, w := range batch.budgets {
		e := badger.NewEntry([]byte(counter), w.encode())
		e.ExpiresAt = w.expiresAt
		if err := txn.SetEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// finish tells the operations of a batch that it was committed (err nil) or failed.
func (k *ledgerBook) finish(batch *ledgerBatch, err error) {
	if err != nil {
		batch.err = fmt.Errorf("%w: %w", errBatchFailed, err)
	}
	for _, h := range batch.ended {
		k.ended(h)
	}
	_ = batch.eachAccount(func(a *bookAccount, ba *batchAccount) error {
		a.freed.Add(-ba.freed)
		a.pending.Add(-ba.ops)
		return nil
	})
	for c, u := range batch.uses {
		k.budgets.committed(c, u.n, u.freed)
	}
	close(batch.done)
}
