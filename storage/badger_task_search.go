package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// prefixTaskCreated is the index of every task by creation time, across accounts.
const prefixTaskCreated = "tc/" // tc/<created, 20 digits>/<task id> -> empty, expiring with the record

// settingTaskCreatedIndex marks a store whose tasks are all in the prefixTaskCreated index.
const settingTaskCreatedIndex = prefixSetting + "task-created-index"

// taskCreatedKey is a task's entry in the index of every task by creation time.
func taskCreatedKey(t Task) []byte {
	return appendTaskCursor(append(make([]byte, 0, len(prefixTaskCreated)+21+len(t.ID)), prefixTaskCreated...), t.CreatedAt, t.ID)
}

func (b *Badger) SearchTasks(_ context.Context, account string, q TaskSearch) (TaskSearchPage, error) {
	return b.searchIndex([]byte(prefixTaskIndex+account+"\x00"), q, func(t Task) bool { return t.Account == account })
}

func (b *Badger) SearchAllTasks(_ context.Context, q TaskSearch) (TaskSearchPage, error) {
	return b.searchIndex([]byte(prefixTaskCreated), q, func(Task) bool { return true })
}

// searchIndex reads an index of tasks by creation time, under prefix, newest first from q's
// cursor; owns says whether a record belongs to the index's account.
func (b *Badger) searchIndex(prefix []byte, q TaskSearch, owns func(Task) bool) (TaskSearchPage, error) {
	q.normal()
	seek := append(bytes.Clone(prefix), 0xff)
	var skip []byte // the cursor's own entry, shown on the previous page
	switch {
	case q.Before != "":
		created, id, err := parseTaskCursor(q.Before)
		if err != nil {
			return TaskSearchPage{}, err
		}
		seek = append(bytes.Clone(prefix), taskCursor(created, id)...)
		skip = seek
	case q.To != 0:
		seek = append(fmt.Appendf(bytes.Clone(prefix), "%020d/", q.To), 0xff)
	}
	var page TaskSearchPage
	err := b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Reverse = true
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		scanned := 0
		for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
			key := it.Item().Key()
			if skip != nil && bytes.Equal(key, skip) {
				continue
			}
			entry := key[len(prefix):] // <created, 20 digits>/<task id>
			if len(entry) < 22 {
				continue
			}
			created, err := strconv.ParseInt(string(entry[:20]), 10, 64)
			if err != nil {
				continue // not an entry of this index (an account name that extends this one's cannot hold \x00)
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

// indexTaskCreation puts the tasks of a store that an earlier version wrote into the index by
// creation time, from the accounts' indexes, each entry expiring with its record: once, when
// the store is opened, marked done by a setting.
func indexTaskCreation(db *badger.DB) error {
	return buildIndex(db, settingTaskCreatedIndex, func(txn *badger.Txn, add func(key []byte, expiresAt uint64)) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(prefixTaskIndex)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			if _, cursor, ok := bytes.Cut(key[len(prefixTaskIndex):], []byte{0}); ok {
				add(append([]byte(prefixTaskCreated), cursor...), it.Item().ExpiresAt())
			}
		}
		return nil
	})
}
