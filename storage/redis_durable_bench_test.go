package storage_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// BenchmarkRedisCreateTaskWait measures what wait_replicas costs a task create: against a local
// master with one replica (both redis-server processes on loopback, AOF with fsync always), the
// create without waiting and with `wait_replicas 1`, one at a time (the latency a request sees)
// and from 32 goroutines at once. Run it by hand:
//
//	go test ./storage/ -run '^$' -bench RedisCreateTaskWait -benchtime 2000x -benchmem
func BenchmarkRedisCreateTaskWait(b *testing.B) {
	master, _ := testredis.StartReplicated(b)
	var n atomic.Int64
	for _, wait := range []int{0, 1} {
		s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: master.URL(), KeyPrefix: fmt.Sprint("bench", wait),
			WaitReplicas: wait, WaitTimeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		create := func(b *testing.B) {
			t := time.Now()
			task := storage.Task{ID: fmt.Sprintf("cgt-bench-%d", n.Add(1)), Kind: storage.KindVideo, Account: "bench", KeyID: "key_1",
				Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: t.Unix(), UpdatedAt: t.Unix(),
				ExpiresAt: t.Add(time.Hour).Unix()}
			if _, err := s.CreateTask(context.Background(), task); err != nil {
				b.Error(err)
			}
		}
		b.Run(fmt.Sprintf("wait_replicas=%d/serial", wait), func(b *testing.B) {
			cpu := cpuTime(b)
			for range b.N {
				create(b)
			}
			reportCPU(b, cpu)
		})
		b.Run(fmt.Sprintf("wait_replicas=%d/parallel32", wait), func(b *testing.B) {
			cpu := cpuTime(b)
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					create(b)
				}
			})
			reportCPU(b, cpu)
		})
		s.Close()
	}
}

// cpuTime is the user and system CPU time this process has used: the client's side of the
// benchmark, which a loaded machine does not inflate as it does the wall-clock time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
