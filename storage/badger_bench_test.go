package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBadgerCreateTask creates tasks from 32 goroutines at once, as 32 client connections
// creating tasks do, and reports how many disk syncs the acknowledged writes shared
// (syncs/op) beside the time per create. Run it by hand:
//
//	go test ./storage/ -run '^$' -bench BadgerCreateTask -benchtime 5000x
func BenchmarkBadgerCreateTask(b *testing.B) {
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var n atomic.Int64
	syncsBefore := s.sync.syncs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			t := time.Now()
			task := Task{ID: fmt.Sprintf("cgt-bench-%d", i), Kind: KindVideo, Account: "bench", KeyID: "key_1",
				Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: t.Unix(), UpdatedAt: t.Unix(),
				ExpiresAt: t.Add(time.Hour).Unix()}
			if _, err := s.CreateTask(ctx, task); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(s.sync.syncs()-syncsBefore)/float64(b.N), "syncs/op")
}
