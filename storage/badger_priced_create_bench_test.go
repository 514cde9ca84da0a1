package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBadgerPricedCreate is the storage work of a priced task create as the gateway makes
// it, from 32 goroutines at once: the key's active-task slot (ReserveCounter, before the
// upstream call), the transient hold, the create that records the task and binds its hold, and
// the BindHold after it. Unlike BenchmarkBadgerPricedTask it takes the slot and settles nothing.
// It reports the process's CPU time per create (cpu-us/op), disk syncs and page faults.
//
//	go test ./storage/ -run '^$' -bench BadgerPricedCreate -benchtime 20000x -cpu 1
func BenchmarkBadgerPricedCreate(b *testing.B) {
	ctx := context.Background()
	s := openCreditedBench(b)
	parallelOps(b, s, func(i int64) error {
		if _, ok, err := s.ReserveCounter(ctx, "active/key_1", 1, -1); err != nil || !ok {
			return fmt.Errorf("reserving a slot: %v, %v", ok, err)
		}
		return heldCreate(ctx, s, i, time.Now(), true)
	})
}

// BenchmarkBadgerSlotAndCreate is the storage work of an unpriced task create as the gateway
// makes it, from 32 goroutines at once: the key's active-task slot (ReserveCounter), then the
// create.
//
//	go test ./storage/ -run '^$' -bench BadgerSlotAndCreate -benchtime 20000x -cpu 1
func BenchmarkBadgerSlotAndCreate(b *testing.B) {
	ctx := context.Background()
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	parallelOps(b, s, func(i int64) error {
		if _, ok, err := s.ReserveCounter(ctx, "active/key_1", 1, -1); err != nil || !ok {
			return fmt.Errorf("reserving a slot: %v, %v", ok, err)
		}
		now := time.Now()
		task := Task{ID: fmt.Sprint("cgt-bench-", i), Kind: KindVideo, Account: "bench", KeyID: "key_1",
			Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
			ExpiresAt: now.Add(time.Hour).Unix(), Active: true}
		_, err := s.CreateTask(ctx, task)
		return err
	})
}

// BenchmarkBadgerPricedCreateAndAnswer is BenchmarkBadgerPricedCreate with, after each create,
// the watcher's first write of the task created 2,000 creates earlier (its first poll comes
// seconds after its create): the record read back and written again, in a lazy batch as the
// watcher writes it, with the upstream's answer, which names the task, in its Result. Its
// entries/op and kv-B/op are what a task's create and first answer write.
//
//	go test ./storage/ -run '^$' -bench BadgerPricedCreateAndAnswer -benchtime 20000x -cpu 1
func BenchmarkBadgerPricedCreateAndAnswer(b *testing.B) {
	const lag = 2000
	ctx := context.Background()
	s := openCreditedBench(b)
	parallelOps(b, s, func(i int64) error {
		if _, ok, err := s.ReserveCounter(ctx, "active/key_1", 1, -1); err != nil || !ok {
			return fmt.Errorf("reserving a slot: %v, %v", ok, err)
		}
		now := time.Now()
		if err := heldCreate(ctx, s, i, now, true); err != nil || i <= lag {
			return err
		}
		id := fmt.Sprint("cgt-bench-", i-lag)
		cur, err := s.ReadTasks(ctx, []string{id})
		if err != nil || len(cur) != 1 {
			return fmt.Errorf("reading an earlier task: %v, %v", cur, err)
		}
		t := cur[0]
		t.Result = fmt.Appendf(nil, `{"content":{},"created_at":%d,"error":null,"execution_expires_after":172800,"id":%q,`+
			`"model":"bench-video","service_tier":"default","status":"queued","updated_at":%[1]d}`, t.CreatedAt, id)
		t.RefreshedAt = now.UnixNano()
		_, errs := s.ReplaceTasks(WithLazySync(ctx), []Task{t})
		return errs[0]
	})
}
