package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// Task searches read the accounts' indexes of tasks by creation time (ta/<account>\x00<created,
// 20 digits>/<task id>, taskIndexKey), newest first from a cursor: an account's search reads its
// own index, the operator's search across accounts reads every account's index at once, merged
// (mergedEntries). There is no index across accounts: its entry was a Badger write of every task
// create, for a search that only the operator's console makes. (A store written by an earlier
// version still has that index, tc/ and the setting s/task-created-index: nothing reads them, and
// the entries expire with their tasks.)

func (b *Badger) SearchTasks(_ context.Context, account string, q TaskSearch) (TaskSearchPage, error) {
	prefix := []byte(prefixTaskIndex + account + "\x00")
	return b.searchIndex(q, func(txn *badger.Txn, from []byte) iter.Seq[[]byte] {
		return indexEntries(txn, prefix, from)
	}, func(t Task) bool { return t.Account == account })
}

// SearchAllTasks merges every account's index: it opens an iterator on each account's index
// that has a task (one seek per account finds them), so a page costs a seek per account besides
// its record reads.
func (b *Badger) SearchAllTasks(_ context.Context, q TaskSearch) (TaskSearchPage, error) {
	return b.searchIndex(q, mergedEntries, func(Task) bool { return true })
}

// searchIndex reads the entries (<created, 20 digits>/<task id>) that entries yields, newest
// first from from (nil: the newest; else an entry or a time followed by 0xff, inclusive), as a
// page of the search q; owns says whether a record belongs to the searched account.
func (b *Badger) searchIndex(q TaskSearch, entries func(txn *badger.Txn, from []byte) iter.Seq[[]byte], owns func(Task) bool) (TaskSearchPage, error) {
	q.normal()
	var from, skip []byte // skip: the cursor's own entry, shown on the previous page
	switch {
	case q.Before != "":
		created, id, err := parseTaskCursor(q.Before)
		if err != nil {
			return TaskSearchPage{}, err
		}
		from = []byte(taskCursor(created, id))
		skip = from
	case q.To != 0:
		from = append(fmt.Appendf(nil, "%020d/", q.To), 0xff)
	}
	var page TaskSearchPage
	err := b.db.View(func(txn *badger.Txn) error {
		scanned := 0
		for entry := range entries(txn, from) {
			if skip != nil && bytes.Equal(entry, skip) {
				continue
			}
			if len(entry) < 22 {
				continue
			}
			created, err := strconv.ParseInt(string(entry[:20]), 10, 64)
			if err != nil {
				continue // not an entry of an index
			}
			if q.From != 0 && created < q.From {
				page.Next = ""
				return nil
			}
			if scanned == q.Scan || len(page.Tasks) == q.Limit {
				return nil // page.Next is the last entry read
			}
			scanned++
			page.Next = string(entry)
			t, err := txnGetTask(txn, string(entry[21:]))
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if owns(t) && q.Matches(t) {
				page.Tasks = append(page.Tasks, t)
			}
		}
		page.Next = ""
		return nil
	})
	return page, err
}

// indexEntries yields the entries of the index under prefix, newest first from from (see
// searchIndex). Each entry is valid until the next is asked for.
func indexEntries(txn *badger.Txn, prefix, from []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		it := newIndexIterator(txn, prefix, from)
		defer it.Close()
		for ; it.ValidForPrefix(prefix); it.Next() {
			if !yield(it.Item().Key()[len(prefix):]) {
				return
			}
		}
	}
}

// newIndexIterator is an iterator on the index under prefix, newest first, at from (see
// searchIndex).
func newIndexIterator(txn *badger.Txn, prefix, from []byte) *badger.Iterator {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	seek := append(bytes.Clone(prefix), 0xff)
	if from != nil {
		seek = append(bytes.Clone(prefix), from...)
	}
	it.Seek(seek)
	return it
}
