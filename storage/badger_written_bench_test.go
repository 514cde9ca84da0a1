package storage

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
)

// writtenOps is how many more ops reportWritten runs, after a benchmark's timing, to count what
// they write.
const writtenOps = 2048

// reportWritten runs op writtenOps more times from 32 goroutines (i counting on from n), as
// parallelOps does, while a Badger subscription receives every entry written, and reports per
// op: the entries mediagw wrote (entries/op: each a skiplist insert and a write-ahead log entry,
// deletions included), their keys' and values' bytes (kv-B/op) and the transactions committed
// (txns/op: Badger's commit markers, which go to the log only). These runs are not timed: the
// subscription's copies would count in the CPU time.
func reportWritten(b *testing.B, s *Badger, n *atomic.Int64, op func(i int64) error) {
	var entries, kvBytes, txns atomic.Int64
	marker := []byte("bench-marker/")
	seen := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	var subscribed sync.WaitGroup
	subscribed.Add(1)
	go func() {
		defer subscribed.Done()
		err := s.db.Subscribe(ctx, func(list *badger.KVList) error {
			for _, kv := range list.Kv {
				switch {
				case bytes.HasPrefix(kv.Key, marker):
					select {
					case seen <- string(kv.Key):
					default: // a marker's repeat, not waited for: the publisher must not wait
					}
				case bytes.Equal(kv.Key, []byte("!badger!txn")):
					txns.Add(1)
				default:
					entries.Add(1)
					kvBytes.Add(int64(len(kv.Key) + len(kv.Value)))
				}
			}
			return nil
		}, []pb.Match{{Prefix: nil}})
		if err != nil && ctx.Err() == nil {
			b.Error(err)
		}
	}()
	defer func() {
		cancel()
		subscribed.Wait()
	}()
	// The subscription starts at some point after the goroutine: written markers tell when it
	// does, and when it has received every write made before the last one.
	mark := func(name string, retry bool) {
		for {
			key := append(bytes.Clone(marker), name...)
			if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, nil) }); err != nil {
				b.Fatal(err)
			}
			select {
			case got := <-seen:
				if got == string(key) {
					return
				}
			case <-time.After(100 * time.Millisecond):
				if !retry {
					b.Fatalf("the subscription did not receive marker %s", name)
				}
			}
		}
	}
	mark("start", true)
	entries.Store(0)
	kvBytes.Store(0)
	txns.Store(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= writtenOps {
				if err := op(n.Add(1)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mark(fmt.Sprint("end-", n.Load()), false)
	b.ReportMetric(float64(entries.Load())/writtenOps, "entries/op")
	b.ReportMetric(float64(kvBytes.Load())/writtenOps, "kv-B/op")
	b.ReportMetric(float64(txns.Load()-1)/writtenOps, "txns/op") // less the end marker's
}
