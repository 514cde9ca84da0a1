package storage

import (
	"bytes"
	"container/heap"
	"iter"

	"github.com/dgraph-io/badger/v4"
)

// mergedEntries yields the entries of every account's index of tasks (ta/), newest first from
// from (see searchIndex), as one index across accounts would hold them: by creation time, then
// task id, both descending. It keeps one iterator per account, in a heap by the entry each is at.
func mergedEntries(txn *badger.Txn, from []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		var h accountHeads
		defer func() {
			for _, head := range h {
				head.it.Close()
			}
		}()
		for _, account := range indexedAccounts(txn) {
			prefix := []byte(prefixTaskIndex + account + "\x00")
			it := newIndexIterator(txn, prefix, from)
			if !it.ValidForPrefix(prefix) {
				it.Close()
				continue
			}
			h = append(h, &accountHead{it: it, prefix: prefix})
		}
		heap.Init(&h)
		for len(h) > 0 {
			head := h[0]
			if !yield(head.entry()) {
				return
			}
			if head.it.Next(); head.it.ValidForPrefix(head.prefix) {
				heap.Fix(&h, 0)
			} else {
				head.it.Close()
				heap.Pop(&h)
			}
		}
	}
}

// indexedAccounts lists the accounts that have an entry in the index of tasks (ta/): one seek
// per account, past its entries (an account name holds no byte below 0x20, so every key of the
// account is below <account>\x01).
func indexedAccounts(txn *badger.Txn) []string {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = []byte(prefixTaskIndex)
	it := txn.NewIterator(opts)
	defer it.Close()
	var accounts []string
	for it.Rewind(); it.Valid(); {
		rest := it.Item().Key()[len(prefixTaskIndex):]
		account, _, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			it.Next() // not an index entry
			continue
		}
		accounts = append(accounts, string(account))
		it.Seek(append([]byte(prefixTaskIndex+string(account)), 1))
	}
	return accounts
}

// accountHead is an account's index iterator at its next entry.
type accountHead struct {
	it     *badger.Iterator
	prefix []byte
}

func (a *accountHead) entry() []byte { return a.it.Item().Key()[len(a.prefix):] }

// accountHeads is a heap of iterators, the one at the newest entry first.
type accountHeads []*accountHead

func (h accountHeads) Len() int           { return len(h) }
func (h accountHeads) Less(i, j int) bool { return bytes.Compare(h[i].entry(), h[j].entry()) > 0 }
func (h accountHeads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *accountHeads) Push(x any)        { *h = append(*h, x.(*accountHead)) }
func (h *accountHeads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
