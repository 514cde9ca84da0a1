// Command watcher measures how evenly the task watcher refreshes several thousand unfinished
// tasks against the simulator: for every task, the longest time between two upstream reads
// (and from the start to the first), compared with the configured interval.
//
//	go run ./bench/watcher -tasks 3000 -interval 5s -rps 1000 -duration 25s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/bench/mainenv"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/handlers/videotask"
	"github.com/mediagw/mediagw/storage"
)

func main() {
	tasks := flag.Int("tasks", 3000, "unfinished tasks to watch")
	interval := flag.Duration("interval", 5*time.Second, "watcher interval")
	rps := flag.Float64("rps", 1000, "watcher max upstream requests per second")
	concurrency := flag.Int("concurrency", 32, "watcher concurrency")
	duration := flag.Duration("duration", 25*time.Second, "how long to watch")
	flag.Parse()

	sim := simulator.New()
	sim.QueuedFor = time.Hour
	var mu sync.Mutex
	reads := map[string][]time.Time{}
	calls := 0 // upstream read calls, single or batched
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			// A single read names the task in the path; a batched read (the task list with
			// filter.task_ids) names many in the query.
			ids := r.URL.Query()["filter.task_ids"]
			if id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]; id != "tasks" {
				ids = append(ids, id)
			}
			now := time.Now()
			mu.Lock()
			calls++
			for _, id := range ids {
				reads[id] = append(reads[id], now)
			}
			mu.Unlock()
		}
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()

	env := mainenv.New("mediagw-watcher-bench-")
	defer env.Close()
	store := env.Badger()
	base, _ := url.Parse(upstream.URL + "/api/v3")
	catalog, _ := providers.NewCatalog([]*providers.Provider{{Name: "sim", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
	h := &videotask.Handler{Catalog: catalog, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop()}
	w := &videotask.Watcher{Tasks: h, Interval: *interval, Concurrency: *concurrency, RatePerSecond: *rps}

	ctx := context.Background()
	for range *tasks {
		req, _ := http.NewRequest(http.MethodPost, upstream.URL+"/api/v3/contents/generations/tasks",
			bytes.NewReader([]byte(`{"model":"m","content":[{"type":"text","text":"x"}]}`)))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		var created struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		if created.ID == "" {
			log.Fatalf("the simulator did not create a task (HTTP %d)", resp.StatusCode)
		}
		now := time.Now()
		t := storage.Task{ID: created.ID, Kind: storage.KindVideo, Account: "a", Provider: "sim", Model: "m",
			Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
		stored, err := store.CreateTask(ctx, t)
		if err != nil {
			log.Fatal(err)
		}
		w.Watch(stored)
	}

	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(stop); close(done) }()
	time.Sleep(*duration)
	close(stop)
	<-done
	end := time.Now()

	var gaps []time.Duration
	never := 0
	mu.Lock()
	for _, times := range reads {
		prev := start
		for _, t := range times {
			gaps = append(gaps, t.Sub(prev))
			prev = t
		}
		if len(times) == 0 {
			never++
		}
		gaps = append(gaps, end.Sub(prev)) // time since the last read, too
	}
	total := 0
	for _, times := range reads {
		total += len(times)
	}
	mu.Unlock()
	never += *tasks - len(reads)
	slices.Sort(gaps)
	p := func(q float64) time.Duration { return gaps[int(q*float64(len(gaps)-1))] }
	fmt.Printf("tasks %d, interval %s, max_rps %.0f, concurrency %d, watched %s\n", *tasks, *interval, *rps, *concurrency, duration.String())
	secs := end.Sub(start).Seconds()
	fmt.Printf("task reads %d (%.0f/s) in %d upstream calls (%.0f/s), tasks never read %d\n", total, float64(total)/secs, calls, float64(calls)/secs, never)
	fmt.Printf("gap between refreshes: p50 %s  p99 %s  max %s  (max / interval = %.2f)\n",
		p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond),
		gaps[len(gaps)-1].Seconds()/interval.Seconds())
}
