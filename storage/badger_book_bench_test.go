package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBadgerLedgerRequest is the ledger's work for priced requests, from 32 goroutines at
// once as 32 client connections make: a hold against a limited account and a key budget, then
// its settlement. recorded holds are written when taken (a task's); transient ones only with
// their end (a request's, Hold.Transient). It reports the process's CPU time per request
// (cpu-us/op) and the commits per request (commits/op: how many requests one batch carries).
//
//	go test ./storage/ -run '^$' -bench BadgerLedgerRequest -benchtime 40000x
func BenchmarkBadgerLedgerRequest(b *testing.B) {
	for _, transient := range []bool{false, true} {
		name := map[bool]string{false: "recorded", true: "transient"}[transient]
		b.Run(name, func(b *testing.B) { benchmarkLedgerRequest(b, transient) })
	}
}

// openLedgerBench opens a store whose account "bench" has MaxAmount, closed with b.
func openLedgerBench(b *testing.B) (s *Badger, ctx context.Context, now time.Time) {
	ctx, now = context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	s, err := OpenBadger(b.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.Credit(ctx, Credit{Account: "bench", Amount: MaxAmount, IdempotencyKey: "c"}, now); err != nil {
		b.Fatal(err)
	}
	return s, ctx, now
}

func benchmarkLedgerRequest(b *testing.B, transient bool) {
	s, ctx, now := openLedgerBench(b)
	var n, commits atomic.Int64
	s.ledger.queue.failCommit = func() error { commits.Add(1); return nil }
	budget := Budget{Limit: MaxAmount, Period: BudgetMonth}
	cpuBefore := cpuTime(b)
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("hold_bench_", n.Add(1))
			h := Hold{ID: id, NewID: true, Account: "bench", KeyID: "key_1", Model: "bench-chat", Amount: 20_000,
				Budget: budget, Deadline: now.Add(DefaultHoldDeadline), Transient: transient}
			if _, _, err := s.Hold(ctx, h, now); err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Settle(ctx, id, 1_234, now); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpuBefore).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(commits.Load())/float64(b.N), "commits/op")
}

// BenchmarkBadgerLedgerGatewayRequest is the ledger's work for a priced pass-through request as
// the gateway makes it (the bench's key has no budget): a transient hold with an id of
// accounting.newHoldID's form, then its settlement; serial (a batch per request) and from 8
// goroutines (as the callgrind probe's 8 connections). It reports allocations per request.
//
//	go test ./storage/ -run '^$' -bench BadgerLedgerGatewayRequest -benchmem
func BenchmarkBadgerLedgerGatewayRequest(b *testing.B) {
	for _, parallel := range []int{0, 8} {
		b.Run(fmt.Sprint("goroutines=", max(parallel, 1)), func(b *testing.B) { benchmarkLedgerGatewayRequest(b, parallel) })
	}
}

func benchmarkLedgerGatewayRequest(b *testing.B, parallel int) {
	s, ctx, now := openLedgerBench(b)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("hold_%024x", i+1)
	}
	var n atomic.Int64
	request := func() bool {
		id := ids[n.Add(1)-1]
		h := Hold{ID: id, NewID: true, Account: "bench", KeyID: "key_1", Model: "bench-chat", Amount: 20_000,
			Deadline: now.Add(DefaultHoldDeadline), Transient: true}
		if _, _, err := s.Hold(ctx, h, now); err != nil {
			b.Error(err)
			return false
		}
		if _, err := s.Settle(ctx, id, 1_234, now); err != nil {
			b.Error(err)
			return false
		}
		return true
	}
	b.ReportAllocs()
	b.ResetTimer()
	if parallel == 0 {
		for range b.N {
			if !request() {
				return
			}
		}
		return
	}
	b.SetParallelism(parallel)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() && request() {
		}
	})
}
