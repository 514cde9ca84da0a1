package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

func (b *Badger) SearchTasks(_ context.Context, account string, q TaskSearch) (TaskSearchPage, error) {
	q.normal()
	prefix := []byte(prefixTaskIndex + account + "\x00")
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
				continue // not an entry of this account (an account name that extends this one's cannot hold \x00)
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
			if t.Account == account && q.Matches(t) {
				page.Tasks = append(page.Tasks, t)
			}
		}
		page.Next = ""
		return nil
	})
	return page, err
}
