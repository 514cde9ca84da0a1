package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
)

// winners runs try(0) … try(n-1) at once and counts the calls that report a win. An error is
// reported as a test error; the call then counts as lost.
func winners(t *testing.T, n int, try func(i int) (won bool, err error)) int {
	t.Helper()
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ok, err := try(i)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
				return
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	return int(won.Load())
}
