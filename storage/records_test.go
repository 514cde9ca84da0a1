package storage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestKeysByIDListAndDelete(t *testing.T) {
	ctx := context.Background()
	b := openTemp(t, t.TempDir())
	defer b.Close()
	quota := int64(50)
	for _, k := range []APIKey{
		{ID: "key_b", Hash: HashSecret("b"), Account: "x", Limits: Limits{Quota: &quota, RateRequests: 10, RateWindow: time.Minute}},
		{ID: "key_a", Hash: HashSecret("a"), Account: "y"},
	} {
		if err := b.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.KeyByID(ctx, "key_b")
	if err != nil || got.Hash != HashSecret("b") || *got.Quota != 50 || got.RateWindow != time.Minute {
		t.Fatalf("KeyByID = %+v, %v", got, err)
	}
	list, err := b.ListKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "key_a" || list[1].ID != "key_b" {
		t.Fatalf("ListKeys = %+v, %v", list, err)
	}
	if err := b.DeleteKey(ctx, "key_b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KeyByHash(ctx, HashSecret("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key still found by hash: %v", err)
	}
	if err := b.DeleteKey(ctx, "key_b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	if _, err := b.KeyByID(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id = %v", err)
	}
	b.PutAccount(ctx, Account{Name: "z", Disabled: true})
	b.PutAccount(ctx, Account{Name: "m"})
	accts, err := b.ListAccounts(ctx)
	if err != nil || len(accts) != 2 || accts[0].Name != "m" || !accts[1].Disabled {
		t.Fatalf("ListAccounts = %+v, %v", accts, err)
	}
}

func TestCounterLimitIsExactUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openTemp(t, dir)
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := b.AddCounter(ctx, "quota/k1", 1, 50); err == nil && ok {
				accepted.Add(1)
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 50 {
		t.Fatalf("%d increments accepted under a limit of 50", accepted.Load())
	}
	if v, ok, _ := b.AddCounter(ctx, "quota/k1", -3, 50); !ok || v != 47 {
		t.Fatalf("refund = %d %v", v, ok)
	}
	b.Close()
	b = openTemp(t, dir)
	defer b.Close()
	if v, _ := b.Counter(ctx, "quota/k1"); v != 47 {
		t.Fatalf("after reopen = %d", v)
	}
	if v, _ := b.Counter(ctx, "never"); v != 0 {
		t.Fatalf("unwritten counter = %d", v)
	}
	if v, ok, _ := b.AddCounter(ctx, "free", 5, -1); !ok || v != 5 {
		t.Fatalf("unlimited add = %d %v", v, ok)
	}
}

func TestClaimAndRecords(t *testing.T) {
	ctx := context.Background()
	b := openTemp(t, t.TempDir())
	defer b.Close()
	var claims atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := b.Claim(ctx, "idem/a", []byte("mine"), time.Hour); err == nil && ok {
				claims.Add(1)
			}
		}()
	}
	wg.Wait()
	if claims.Load() != 1 {
		t.Fatalf("%d concurrent claims succeeded", claims.Load())
	}
	existing, ok, err := b.Claim(ctx, "idem/a", []byte("other"), time.Hour)
	if ok || err != nil || string(existing) != "mine" {
		t.Fatalf("second claim = %q %v %v", existing, ok, err)
	}
	b.PutRecord(ctx, "outbox/2", []byte("two"), 0)
	b.PutRecord(ctx, "outbox/1", []byte("one"), 0)
	b.PutRecord(ctx, "other/1", []byte("x"), 0)
	var seen []string
	b.ScanRecords(ctx, "outbox/", func(k string, v []byte) bool { seen = append(seen, k+"="+string(v)); return true })
	if len(seen) != 2 || seen[0] != "outbox/1=one" || seen[1] != "outbox/2=two" {
		t.Fatalf("scan = %v", seen)
	}
	b.DeleteRecord(ctx, "outbox/1")
	if _, err := b.Record(ctx, "outbox/1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted record: %v", err)
	}
	if v, err := b.Record(ctx, "outbox/2"); err != nil || string(v) != "two" {
		t.Fatalf("record = %q %v", v, err)
	}
}
