package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBadgerPricedTask is the storage work of a priced task's life, from 32 goroutines at
// once: the create's transient hold, the create that records and binds it with the task's
// record, the BindHold after it, and, lag creates later (a task that ran meanwhile), the
// settlement of an earlier task's hold at its finish. It reports the process's CPU time per task
// (cpu-us/op) and the disk syncs per task (syncs/op).
//
//	go test ./storage/ -run '^$' -bench BadgerPricedTask -benchtime 20000x
func BenchmarkBadgerPricedTask(b *testing.B) {
	const lag = 2000
	ctx := context.Background()
	s := openCreditedBench(b)
	parallelOps(b, s, func(i int64) error {
		now := time.Now()
		if err := heldCreate(ctx, s, i, now, false); err != nil {
			return err
		}
		if i <= lag {
			return nil
		}
		_, err := s.Settle(ctx, fmt.Sprint("hold_bench_", i-lag), 150_000, now)
		return err
	})
}

// openCreditedBench opens a Badger store for a benchmark, its account "bench" credited without
// limit; the benchmark's end closes it.
func openCreditedBench(b *testing.B) *Badger {
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() }) // a benchmark's store: nothing to keep
	if _, err := s.Credit(context.Background(), Credit{Account: "bench", Amount: MaxAmount, IdempotencyKey: "c"}, time.Now()); err != nil {
		b.Fatal(err)
	}
	return s
}

// heldCreate is a priced create's storage work after its slot: the transient hold
// "hold_bench_<i>", the create of task "cgt-bench-<i>" that records it (Active when the task
// holds an active-task slot) and the BindHold after it.
func heldCreate(ctx context.Context, s *Badger, i int64, now time.Time, active bool) error {
	hold := Hold{ID: fmt.Sprint("hold_bench_", i), NewID: true, Account: "bench", KeyID: "key_1", Model: "bench-video",
		Amount: 200_000, Deadline: now.Add(DefaultHoldDeadline), Transient: true}
	if _, _, err := s.Hold(ctx, hold, now); err != nil {
		return err
	}
	task := Task{ID: fmt.Sprint("cgt-bench-", i), Kind: KindVideo, Account: "bench", KeyID: "key_1",
		Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
		ExpiresAt: now.Add(time.Hour).Unix(), HoldID: hold.ID, HoldAmount: hold.Amount, Active: active}
	if _, err := s.CreateTask(ctx, task); err != nil {
		return err
	}
	return s.BindHold(ctx, hold.ID, task.ID)
}
