package storage

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// BenchmarkBadgerOptions is the storage cost of a priced pass-through request (a transient hold
// and its settlement, bench/run.sh's priced gateway) under Badger options other than
// OpenBadger's, one sub-benchmark each: the process's CPU time per request (cpu-us/op, every
// goroutine: Badger's writer, its memtable flushes and compactions included, up to the Close
// that writes the last memtable out), the bytes of table files it leaves (table-B/op) and the
// process's peak resident memory (maxrss-MiB: meaningful for one sub-benchmark per process, as
// the script in bench/README.md's session 11 entry runs them). The requests are
// made one at a time, so that every batch carries one request whatever the variant and the
// machine's load. Compare the variants within one run:
//
//	go test ./storage/ -run '^$' -bench BadgerOptions -benchtime 100000x -count 3
func BenchmarkBadgerOptions(b *testing.B) {
	variants := []struct {
		name string
		tune func(badger.Options) badger.Options
	}{
		{"current", nil},
		{"no_compression", func(o badger.Options) badger.Options {
			return o.WithCompression(options.None).WithBlockCacheSize(0)
		}},
		{"memtable_16MiB", func(o badger.Options) badger.Options { return o.WithMemTableSize(16 << 20) }},
		{"memtable_48MiB", func(o badger.Options) badger.Options { return o.WithMemTableSize(48 << 20) }},
		{"memtable_64MiB", func(o badger.Options) badger.Options { return o.WithMemTableSize(64 << 20) }},
		{"block_16KiB", func(o badger.Options) badger.Options { return o.WithBlockSize(16 << 10) }},
		{"no_bloom", func(o badger.Options) badger.Options { return o.WithBloomFalsePositive(0) }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) { benchmarkOptions(b, v.tune) })
	}
}

func benchmarkOptions(b *testing.B, tune func(badger.Options) badger.Options) {
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	dir := b.TempDir()
	s, err := openBadger(dir, BadgerOptions{Now: func() time.Time { return now }}, tune)
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			if err := s.Close(); err != nil {
				b.Error(err)
			}
		}
	}()
	if _, err := s.Credit(ctx, Credit{Account: "bench", Amount: MaxAmount, IdempotencyKey: "c"}, now); err != nil {
		b.Fatal(err)
	}
	budget := Budget{Limit: MaxAmount, Period: BudgetMonth}
	cpuBefore := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("hold_bench_", i)
		h := Hold{ID: id, Account: "bench", KeyID: "key_1", Model: "bench-chat", Amount: 20_000,
			Budget: budget, Deadline: now.Add(DefaultHoldDeadline), Transient: true}
		if _, _, err := s.Hold(ctx, h, now); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Settle(ctx, id, 1_234, now); err != nil {
			b.Fatal(err)
		}
	}
	closed = true
	if err := s.Close(); err != nil { // writes the last memtable out
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpuBefore).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(tableFileBytes(b, dir))/float64(b.N), "table-B/op")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB") // Linux: Maxrss is in KiB
}

// tableFileBytes is the size of the table files (.sst) under dir.
func tableFileBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(d.Name()) != ".sst" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
