// Command watchfleet measures the task watcher of several gateway instances sharing one Redis
// store: N watchers (each with its own Redis client, as N processes would have) keep many
// unfinished simulator tasks refreshed. It reports, for every task, the longest time between two
// upstream reads, and the upstream calls per second against what reading one task at a time
// would need (tasks ÷ interval).
//
//	go run ./bench/watchfleet -tasks 20000 -instances 3 -interval 5s -duration 30s
//
// redis-server is started on loopback by internal/testredis (installed with apt-get when
// missing), with appendfsync everysec for the setup's speed: the watcher's work, not durability,
// is measured. Every run is bounded by -duration.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/handlers/videotask"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

func main() {
	tasks := flag.Int("tasks", 20000, "unfinished tasks to watch")
	instances := flag.Int("instances", 3, "watchers (gateway instances) sharing the store")
	interval := flag.Duration("interval", 5*time.Second, "watcher interval")
	rps := flag.Float64("rps", 200, "each watcher's max upstream requests per second")
	concurrency := flag.Int("concurrency", 8, "each watcher's concurrency")
	duration := flag.Duration("duration", 30*time.Second, "how long to watch")
	batch := flag.Bool("batch", true, "let the simulator's list filter by id (false: one read per task)")
	flag.Parse()

	env := &mainTB{}
	defer env.cleanup()
	srv := testredis.Start(env, testredis.Options{Fsync: "everysec"})

	sim := simulator.New()
	sim.QueuedFor = time.Hour
	var (
		mu           sync.Mutex
		reads        = map[string][]time.Time{}
		single, list atomic.Int64
	)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, rest, _ := strings.Cut(r.URL.Path, "/contents/generations/tasks")
			now := time.Now()
			mu.Lock()
			if id := strings.Trim(rest, "/"); id != "" {
				single.Add(1)
				reads[id] = append(reads[id], now)
			} else {
				list.Add(1)
				for _, id := range r.URL.Query()["filter.task_ids"] {
					reads[id] = append(reads[id], now)
				}
			}
			mu.Unlock()
			if rest == "" && !*batch {
				http.NotFound(w, r)
				return
			}
		}
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()
	base, _ := url.Parse(upstream.URL + "/api/v3")
	catalog, err := providers.NewCatalog([]*providers.Provider{{Name: "sim", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
	if err != nil {
		env.Fatalf("%v", err)
	}

	ctx := context.Background()
	open := func() *storage.Redis {
		s, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: srv.URL(), KeyPrefix: "fleet"})
		if err != nil {
			env.Fatalf("%v", err)
		}
		return s
	}
	setup := open()
	fmt.Printf("creating %d tasks…\n", *tasks)
	var wg sync.WaitGroup
	ids := make(chan int)
	for range 32 {
		wg.Go(func() {
			for range ids {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/api/v3/contents/generations/tasks",
					strings.NewReader(`{"model":"m","content":[{"type":"text","text":"x"}]}`))
				req.Header.Set("Authorization", "Bearer k")
				sim.ServeHTTP(rec, req)
				var created struct{ ID string }
				if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil || created.ID == "" {
					env.Fatalf("the simulator did not create a task: %d %s", rec.Code, rec.Body)
				}
				now := time.Now()
				t := storage.Task{ID: created.ID, Kind: storage.KindVideo, Account: "a", Provider: "sim", Model: "m",
					Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
				if _, err := setup.CreateTask(ctx, t); err != nil {
					env.Fatalf("%v", err)
				}
			}
		})
	}
	for i := range *tasks {
		ids <- i
	}
	close(ids)
	wg.Wait()
	setup.Close()

	var stores []*storage.Redis
	var watchers []*videotask.Watcher
	for i := range *instances {
		s := open()
		stores = append(stores, s)
		h := &videotask.Handler{Catalog: catalog, Store: s, Client: &http.Client{Timeout: 30 * time.Second}, Logger: zap.NewNop()}
		watchers = append(watchers, &videotask.Watcher{Tasks: h, Interval: *interval, Concurrency: *concurrency,
			RatePerSecond: *rps, Owner: fmt.Sprint("instance-", i)})
	}
	start := time.Now()
	stop := make(chan struct{})
	var running sync.WaitGroup
	for _, w := range watchers {
		running.Go(func() { w.Run(stop) })
	}
	time.Sleep(*duration)
	close(stop)
	running.Wait()
	end := time.Now()
	for _, s := range stores {
		s.Close()
	}

	var gaps []time.Duration
	total, never := 0, 0
	mu.Lock()
	for _, times := range reads {
		prev := start
		for _, t := range times {
			gaps = append(gaps, t.Sub(prev))
			prev = t
		}
		gaps = append(gaps, end.Sub(prev))
		total += len(times)
	}
	never = *tasks - len(reads)
	mu.Unlock()
	slices.Sort(gaps)
	p := func(q float64) time.Duration { return gaps[int(q*float64(len(gaps)-1))] }
	secs := end.Sub(start).Seconds()
	calls := single.Load() + list.Load()
	fmt.Printf("tasks %d, instances %d, interval %s, max_rps %.0f and concurrency %d each, batch %v, watched %s\n",
		*tasks, *instances, *interval, *rps, *concurrency, *batch, duration.String())
	fmt.Printf("task reads %d (%.0f/s); upstream calls %.0f/s (%d list, %d single); one read per task would need %.0f/s; tasks never read %d\n",
		total, float64(total)/secs, float64(calls)/secs, list.Load(), single.Load(), float64(*tasks)/interval.Seconds(), never)
	fmt.Printf("gap between reads of a task: p50 %s  p99 %s  max %s  (max / interval = %.2f)\n",
		p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond),
		gaps[len(gaps)-1].Seconds()/interval.Seconds())
}

// mainTB lets testredis run outside a test.
type mainTB struct {
	cleanups []func()
	dirs     []string
}

func (m *mainTB) Helper() {}
func (m *mainTB) Fatalf(format string, args ...any) {
	m.cleanup()
	log.Fatalf(format, args...)
}
func (m *mainTB) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "bench-watchfleet-")
	if err != nil {
		log.Fatal(err)
	}
	m.dirs = append(m.dirs, dir)
	return dir
}
func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
	for _, d := range m.dirs {
		os.RemoveAll(d)
	}
	m.dirs = nil
}
