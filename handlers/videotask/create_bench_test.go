package videotask

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
)

// BenchmarkCreate measures the gateway's own work per task create: validation, admission (the
// key's active-task slot), the upstream call to a local fake, the durable task record in a real
// Badger store and the answer, from 32 goroutines at once as 32 client connections would. Run
// it by hand for allocations per create (exact) and time per create (disturbed by other load):
//
//	go test ./handlers/videotask/ -run '^$' -bench Create -benchmem -cpu 1
func BenchmarkCreate(b *testing.B) {
	var n atomic.Int64
	up := newFakeUpstream(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cgt-bench-%d"}`, n.Add(1))
	})
	h := newHandler(b, up.URL, nil)
	h.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	meter := accounting.NewMeter(h.Store, time.Hour, zap.NewNop())
	b.Cleanup(meter.Close)
	h.Accounting = &accounting.Accountant{Store: h.Store, Meter: meter}
	b.SetParallelism(32)
	b.ReportAllocs()
	cpu := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w := serve(h, http.MethodPost, createPath, createBody); w.Code != http.StatusOK {
				b.Errorf("create: %d %s", w.Code, w.Body)
				return
			}
		}
	})
	b.StopTimer()
	// The process's CPU time per create (the fake upstream's included) is disturbed far less by
	// other load on the machine than the time per create.
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-us/op")
}
