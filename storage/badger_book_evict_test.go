package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Under load over more accounts and key budgets than the book keeps, accounts and counters are
// dropped and read again, and every account's ledger stays exact: each hold that fit was taken,
// each ended once, and the balance, the held amount and the budget are what the operations
// make them.
func TestBadgerBookEvictsUnderLoad(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 8
	b.ledger.budgets.max = 4
	ctx := context.Background()
	const accounts, workers, rounds = 40, 16, 30
	for i := range accounts {
		if _, err := b.Credit(ctx, Credit{Account: fmt.Sprint("acct", i), Amount: 1000, IdempotencyKey: "c"}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				account := fmt.Sprint("acct", (w*rounds+r)%accounts)
				id := fmt.Sprintf("h-%d-%d", w, r)
				h := Hold{ID: id, Account: account, KeyID: "key-" + account, Amount: 5,
					Budget: Budget{Limit: 1000, Period: BudgetMonth}, Deadline: bookNow.Add(time.Hour)}
				if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
					t.Errorf("hold %s: %v", id, err)
					return
				}
				if r%3 == 2 {
					continue // left open
				}
				if _, err := b.Settle(ctx, id, 2, bookNow); err != nil {
					t.Errorf("settle %s: %v", id, err)
					return
				}
				if _, err := b.Release(ctx, id, "again", bookNow); !errors.Is(err, ErrHoldEnded) {
					t.Errorf("ending %s twice: %v", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := b.ledger.size(); n > 8+workers {
		t.Fatalf("the book keeps %d accounts; its bound is 8 (and those in use)", n)
	}
	settled, open := make(map[string]int64), make(map[string]int64)
	for w := range workers {
		for r := range rounds {
			account := fmt.Sprint("acct", (w*rounds+r)%accounts)
			if r%3 == 2 {
				open[account]++
			} else {
				settled[account]++
			}
		}
	}
	for i := range accounts {
		account := fmt.Sprint("acct", i)
		bal, entries := sumsUp(t, b, account)
		want := 1000 - 2*settled[account] - 5*open[account]
		if bal.Amount != want || bal.Held != 5*open[account] || len(entries) != 1+2*int(settled[account])+int(open[account]) {
			t.Fatalf("%s: balance %+v with %d entries; want %d with %d held", account, bal, len(entries), want, 5*open[account])
		}
		// The budget counter agrees: what is held and charged.
		c, err := b.ledger.budgets.lock(b.db, prefixBudget+"key-"+account+"\x00m2026-11", b.ledger.epoch.Load()+1)
		if err != nil {
			t.Fatal(err)
		}
		spent := c.spent
		b.ledger.budgets.mu.Unlock()
		if spent != 2*settled[account]+5*open[account] {
			t.Fatalf("%s's budget counter %d; want %d", account, spent, 2*settled[account]+5*open[account])
		}
	}
}

// A hold taken before its account was dropped from memory is still known by its ID: Hold
// answers it, and it ends once.
func TestBadgerBookHoldOutlivesItsAccountInMemory(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 1
	ctx := context.Background()
	h := Hold{ID: "h", Account: "acme", Amount: 5, Deadline: bookNow.Add(time.Hour)}
	first, entry, err := b.Hold(ctx, h, bookNow)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // other accounts push acme out
		if _, _, err := b.Hold(ctx, Hold{ID: fmt.Sprint("o", i), Account: fmt.Sprint("other", i), Amount: 1, Deadline: bookNow.Add(time.Hour)}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := b.ledger.holds.Load("h"); ok {
		t.Fatal("the hold of a dropped account is still in memory")
	}
	again, entry2, err := b.Hold(ctx, h, bookNow)
	if err != nil || again != first || entry2 != entry {
		t.Fatalf("Hold again = %+v %+v %v; want the first %+v %+v", again, entry2, err, first, entry)
	}
	if _, err := b.Settle(ctx, "h", 3, bookNow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, "h", 3, bookNow); !errors.Is(err, ErrHoldEnded) {
		t.Fatalf("settling twice = %v", err)
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Amount != -3 || bal.Held != 0 {
		t.Fatalf("balance %+v", bal)
	}
}

// size is the number of accounts in the book's memory.
func (k *ledgerBook) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.accounts)
}
