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
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Credit(ctx, Credit{Account: "bench", Amount: MaxAmount, IdempotencyKey: "c"}, time.Now()); err != nil {
		b.Fatal(err)
	}
	parallelOps(b, s, func(i int64) error {
		now := time.Now()
		hold := Hold{ID: fmt.Sprint("hold_bench_", i), NewID: true, Account: "bench", KeyID: "key_1", Model: "bench-video",
			Amount: 200_000, Deadline: now.Add(DefaultHoldDeadline), Transient: true}
		if _, _, err := s.Hold(ctx, hold, now); err != nil {
			return err
		}
		task := Task{ID: fmt.Sprint("cgt-bench-", i), Kind: KindVideo, Account: "bench", KeyID: "key_1",
			Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
			ExpiresAt: now.Add(time.Hour).Unix(), HoldID: hold.ID, HoldAmount: hold.Amount}
		if _, err := s.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := s.BindHold(ctx, hold.ID, task.ID); err != nil {
			return err
		}
		if i <= lag {
			return nil
		}
		_, err := s.Settle(ctx, fmt.Sprint("hold_bench_", i-lag), 150_000, now)
		return err
	})
}
