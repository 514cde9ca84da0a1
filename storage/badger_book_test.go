package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var bookNow = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

func openBook(t *testing.T, dir string) *Badger {
	t.Helper()
	b, err := OpenBadger(dir, BadgerOptions{Now: func() time.Time { return bookNow }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sumsUp reads the account's ledger from Badger, page by page, and checks that it sums to its
// balance, that every entry's BalanceAfter is the running sum, and that a page has a cursor only
// when it is full and more entries follow; it returns the balance and the entries.
func sumsUp(t *testing.T, b *Badger, account string) (Balance, []LedgerEntry) {
	t.Helper()
	ctx := context.Background()
	var entries []LedgerEntry
	var sum int64
	for after := ""; ; {
		page, next, err := b.LedgerPage(ctx, account, after, MaxLedgerPage)
		if err != nil || (next != "" && len(page) != MaxLedgerPage) || (after != "" && len(page) == 0) {
			t.Fatalf("LedgerPage(%s, after %q) = %d entries, next %q, %v", account, after, len(page), next, err)
		}
		for _, e := range page {
			sum += e.Amount
			if e.ID != fmt.Sprint(len(entries)+1) || e.BalanceAfter != sum {
				t.Fatalf("%s's entry %d = %+v; want id %d and balance after %d", account, len(entries), e, len(entries)+1, sum)
			}
			entries = append(entries, e)
		}
		if after = next; next == "" {
			break
		}
	}
	bal, err := b.Balance(ctx, account)
	if err != nil || bal.Amount != sum {
		t.Fatalf("%s's balance %+v, %v; its entries sum to %d", account, bal, err, sum)
	}
	return bal, entries
}

// The ledger's keys are those fmt made before: the entry number and the hold's deadline as 20
// zero-padded digits, the budget period as a date in UTC.
func TestLedgerKeys(t *testing.T) {
	for _, n := range []uint64{0, 1, 42, 1e19, math.MaxUint64} {
		if got, want := entryKey("acme", n), fmt.Sprintf("%s%s\x00%020d", prefixEntry, "acme", n); got != want {
			t.Errorf("entryKey(%d) = %q, want %q", n, got, want)
		}
	}
	at := time.Date(2026, 1, 31, 23, 59, 59, 0, time.FixedZone("X", -3600)) // February 1 in UTC
	for period, want := range map[string]string{BudgetDay: "d2026-02-01", BudgetMonth: "m2026-02", BudgetTotal: "all"} {
		if got, _ := budgetPeriod(period, at); got != want {
			t.Errorf("budgetPeriod(%s) = %q, want %q", period, got, want)
		}
	}
	for _, d := range []time.Time{{}, time.Unix(0, 0), time.Date(2026, 11, 27, 3, 0, 0, 123456789, time.UTC)} {
		h := Hold{ID: "hold_1", Deadline: d}
		if got, want := openHoldKey(h), fmt.Sprintf("%s%020d/%s", prefixOpenHold, max(d.UnixMicro(), 0), h.ID); got != want {
			t.Errorf("openHoldKey(%v) = %q, want %q", d, got, want)
		}
	}
}

// A batch that fails to commit fails every operation in it, and memory is read again from
// Badger: the balance, the open holds and the budget counter are as before the batch, and the
// next operations decide on them.
func TestBadgerBookFailedBatch(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: 50, Period: BudgetDay}
	hold := func(id string, amount int64) error {
		_, _, err := b.Hold(ctx, Hold{ID: id, Account: "acme", KeyID: "k", Amount: amount, Budget: budget, Deadline: bookNow.Add(time.Hour)}, bookNow)
		return err
	}
	if err := hold("kept", 30); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk full")
	b.ledger.queue.failCommit = func() error { return broken }
	if err := hold("lost", 20); !errors.Is(err, broken) || !errors.Is(err, errBatchFailed) {
		t.Fatalf("a hold whose batch failed = %v; want the batch's error", err)
	}
	if _, err := b.Settle(ctx, "kept", 10, bookNow); !errors.Is(err, broken) {
		t.Fatalf("a settle whose batch failed = %v; want the batch's error", err)
	}
	b.ledger.queue.failCommit = nil

	if _, err := b.HoldByID(ctx, "lost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed hold = %v; want it unknown", err)
	}
	if h, err := b.HoldByID(ctx, "kept"); err != nil || h.State != HoldOpen {
		t.Fatalf("the hold whose settle failed = %+v, %v; want it open", h, err)
	}
	// Memory was read again: the budget has 20 left (50 - 30), not 0, and the balance 70.
	if err := hold("again", 20); err != nil {
		t.Fatalf("a hold that fits what Badger has: %v", err)
	}
	if err := hold("over", 1); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("a hold past the budget = %v; want ErrBudgetExceeded", err)
	}
	if _, err := b.Settle(ctx, "kept", 10, bookNow); err != nil {
		t.Fatalf("settling the hold whose settle failed: %v", err)
	}
	bal, entries := sumsUp(t, b, "acme")
	if bal.Amount != 100-10-20 || bal.Held != 20 || len(entries) != 4 {
		t.Fatalf("balance %+v with %d entries; want 70 with 20 held, and 4 entries", bal, len(entries))
	}
}

// Operations racing with a failed batch: each one either answers an error and left nothing,
// or succeeded and is in Badger; the ledger sums up, and the balance holds exactly the
// successful holds. The holds come in rounds of concurrent ones, each round at least one
// commit (a round may well fit one batch: a commit's leader lets the others join first), and
// every second commit fails.
func TestBadgerBookFailedBatchUnderLoad(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1000, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	commits := 0
	b.ledger.queue.failCommit = func() error {
		mu.Lock()
		defer mu.Unlock()
		if commits++; commits%2 == 0 {
			return errors.New("every second commit fails")
		}
		return nil
	}
	const holds, rounds = 200, 4
	ok := make([]bool, holds)
	for round := range rounds {
		var wg sync.WaitGroup
		for i := round * holds / rounds; i < (round+1)*holds/rounds; i++ {
			wg.Go(func() {
				_, _, err := b.Hold(ctx, Hold{ID: fmt.Sprint("h", i), Account: "acme", Amount: 1, Deadline: bookNow.Add(time.Hour)}, bookNow)
				if err != nil && !errors.Is(err, errBatchFailed) {
					t.Errorf("hold %d: %v", i, err)
				}
				ok[i] = err == nil
			})
		}
		wg.Wait()
	}
	b.ledger.queue.failCommit = nil
	var held int64
	for i := range holds {
		_, err := b.HoldByID(ctx, fmt.Sprint("h", i))
		if ok[i] != (err == nil) {
			t.Fatalf("hold %d answered ok=%v; in Badger: %v", i, ok[i], err)
		}
		if ok[i] {
			held++
		}
	}
	if commits < 2 {
		t.Fatalf("%d commits: no batch failed", commits)
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Amount != 1000-held || bal.Held != held {
		t.Fatalf("balance %+v; want %d held of 1000", bal, held)
	}
}

// A crash between a decision and its commit loses the decision, which was never answered: the
// store's files copied while the commit waits (as a killed process leaves them) have nothing of
// it, and the hold is answered only once it is committed.
func TestBadgerBookCrashBetweenDecisionAndCommit(t *testing.T) {
	dir := t.TempDir()
	b := openBook(t, dir)
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	entered, resume := make(chan struct{}), make(chan struct{})
	b.ledger.queue.failCommit = func() error {
		close(entered)
		<-resume
		return nil
	}
	answered := make(chan error, 1)
	go func() {
		_, _, err := b.Hold(ctx, Hold{ID: "h", Account: "acme", Amount: 30, Deadline: bookNow.Add(time.Hour)}, bookNow)
		answered <- err
	}()
	<-entered
	killed := t.TempDir()
	if err := copyStoreFiles(dir, killed); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-answered:
		t.Fatalf("the hold was answered (%v) before its commit", err)
	default:
	}
	close(resume)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	b.ledger.queue.failCommit = nil

	c := openBook(t, killed)
	defer c.Close()
	if _, err := c.HoldByID(ctx, "h"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the hold decided but not committed, after the crash: %v; want none", err)
	}
	if bal, _ := sumsUp(t, c, "acme"); bal.Amount != 100 || bal.Held != 0 {
		t.Fatalf("balance after the crash %+v; want 100, nothing held", bal)
	}
	if _, _, err := c.Hold(ctx, Hold{ID: "h2", Account: "acme", Amount: 100, Deadline: bookNow.Add(time.Hour)}, bookNow); err != nil {
		t.Fatalf("the restarted store decides on what Badger has: %v", err)
	}
}

// A ledger write big enough for Badger's value log (a credit's note of valueThreshold bytes, in
// its entry's block and its idempotency record) is acknowledged only after a sync of the value
// log: the batch's commit does not go through commitSerial, which tells the sync of such values.
func TestBadgerBookBigValueSyncsTheValueLog(t *testing.T) {
	ctx, now, b := openLazyTestBadger(t)
	var valueLogSyncs atomic.Int32
	dbSync := b.logs.dbSync
	b.logs.dbSync = func() error { valueLogSyncs.Add(1); return dbSync() }
	note := strings.Repeat("x", valueThreshold)
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1, IdempotencyKey: "big", Note: note}, now); err != nil {
		t.Fatal(err)
	}
	if got := valueLogSyncs.Load(); got < 1 {
		t.Errorf("%d syncs of the value log after a credit with a big note; want 1 or more", got)
	}
	if _, entries := sumsUp(t, b, "acme"); len(entries) != 1 || entries[0].Note != note {
		t.Errorf("the credit's entry was not read back with its note")
	}
}
