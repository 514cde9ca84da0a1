package upstream

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestBudgetUnderStressGivesEverythingBack: accounts reserve, grow (waiting and not), replace and
// release while the budget is resized under them; at the end nothing is held, no account is
// left, and every waiter returned within its patience.
func TestBudgetUnderStressGivesEverythingBack(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 256<<10)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			budget.Resize(int64(512<<10+(i%4)*256<<10), int64((i%3)*128<<10))
		}
	}()
	for g := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				acct := fmt.Sprint("acct", r.IntN(5))
				var h *AnswerHold
				var ok bool
				if r.IntN(2) == 0 {
					h, ok = budget.ReserveWaiting(acct, 64<<10, time.Duration(r.IntN(20))*time.Millisecond)
				} else {
					h, ok = budget.Reserve(acct, int64(r.IntN(64<<10)))
				}
				if !ok {
					continue
				}
				began := time.Now()
				for range r.IntN(4) {
					if !h.growTo(int64(r.IntN(600 << 10))) {
						break
					}
				}
				_ = h.add(int64(r.IntN(32 << 10)))
				if time.Since(began) > 2*time.Second {
					t.Errorf("a hold waited %v", time.Since(began))
				}
				h.Release()
				h.Release()
			}
		}()
	}
	wg.Wait()
	close(stop)
	budget.mu.Lock()
	defer budget.mu.Unlock()
	if budget.held != 0 || len(budget.accounts) != 0 {
		t.Fatalf("after every release: %d held, %d accounts left", budget.held, len(budget.accounts))
	}
}
