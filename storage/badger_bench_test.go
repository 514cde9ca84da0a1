package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBadgerCreateTask creates tasks from 32 goroutines at once, as 32 client connections
// creating tasks do, and reports how many disk syncs the acknowledged writes shared
// (syncs/op), the process's CPU time per create (cpu-us/op, user + system: less disturbed by
// other load on the machine than the time per create) and the size on disk of Badger's tables
// at the end, per create (table-B/op: what the memtables written out so far take, after
// compaction). Run it by hand:
//
//	go test ./storage/ -run '^$' -bench BadgerCreateTask -benchtime 5000x
func BenchmarkBadgerCreateTask(b *testing.B) {
	benchmarkBadgerCreate(b, 0)
}

// BenchmarkBadgerCreateAndRefresh is BenchmarkBadgerCreateTask where each create is followed,
// as a watcher's first read and write of a task would be, by a read and a rewrite of the task
// created 20,000 creates earlier: these find records that left the memtable.
//
//	go test ./storage/ -run '^$' -bench BadgerCreateAndRefresh -benchtime 40000x
func BenchmarkBadgerCreateAndRefresh(b *testing.B) {
	benchmarkBadgerCreate(b, 20000)
}

func benchmarkBadgerCreate(b *testing.B, refreshLag int64) {
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	parallelOps(b, s, func(i int64) error {
		t := time.Now()
		task := Task{ID: fmt.Sprintf("cgt-bench-%d", i), Kind: KindVideo, Account: "bench", KeyID: "key_1",
			Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: t.Unix(), UpdatedAt: t.Unix(),
			ExpiresAt: t.Add(time.Hour).Unix()}
		if _, err := s.CreateTask(ctx, task); err != nil {
			return err
		}
		if refreshLag == 0 || i <= refreshLag {
			return nil
		}
		old, err := s.ReadTasks(ctx, []string{fmt.Sprintf("cgt-bench-%d", i-refreshLag)})
		if err != nil || len(old) != 1 {
			return fmt.Errorf("reading an earlier task: %v, %v", old, err)
		}
		old[0].Status, old[0].UpdatedAt = "running", t.Unix()
		_, err = s.ReplaceTask(ctx, old[0])
		return err
	})
	var tableBytes int64
	for _, t := range s.db.Tables() {
		tableBytes += int64(t.OnDiskSize)
	}
	b.ReportMetric(float64(tableBytes)/float64(b.N), "table-B/op")
}

// parallelOps runs op b.N times from 32 goroutines at once, as 32 client connections make
// requests, with i counting from 1, and reports the disk syncs (syncs/op), the process's CPU
// time (cpu-us/op, user + system: less disturbed by other load on the machine than the time per
// op) and its page faults (faults/op: first touches of fresh memory, such as Badger's memtable
// arenas and mapped write-ahead logs, and writes to mapped pages a disk sync cleaned) per op;
// then what an op writes to Badger (reportWritten).
func parallelOps(b *testing.B, s *Badger, op func(i int64) error) {
	var n atomic.Int64
	syncsBefore := s.sync.syncs()
	cpuBefore, faultsBefore := cpuTime(b), pageFaults(b)
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(n.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(s.sync.syncs()-syncsBefore)/float64(b.N), "syncs/op")
	b.ReportMetric(float64((cpuTime(b)-cpuBefore).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(pageFaults(b)-faultsBefore)/float64(b.N), "faults/op")
	reportWritten(b, s, &n, op)
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	ru := rusage(b)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pageFaults is the number of page faults of the process so far, minor and major.
func pageFaults(b *testing.B) int64 {
	ru := rusage(b)
	return ru.Minflt + ru.Majflt
}

func rusage(b *testing.B) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru
}
