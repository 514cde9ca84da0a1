// Command outbox measures the CPU an idle gateway spends on a callback outbox that holds many
// pending events, most of them not due: it fills a Badger store with -events events (all but
// -due of them due in an hour), runs the outbox until the due ones are delivered to a local
// receiver, then measures the process's CPU time over -idle while nothing else happens.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/bench/mainenv"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/storage"
)

func main() {
	events := flag.Int("events", 100_000, "pending events")
	due := flag.Int("due", 100, "events due at once (delivered before the idle measurement)")
	idle := flag.Duration("idle", 30*time.Second, "idle measurement")
	flag.Parse()

	env := mainenv.New("outbox-bench-")
	defer env.Close()
	store := env.Badger()

	var delivered atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	// Fill the store directly (as a long-running gateway would have), 64 writers at a time.
	start := time.Now()
	later := start.Add(time.Hour).UnixNano()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= *events {
					return
				}
				dueAt := later + int64(i)
				if i < *due {
					dueAt = start.UnixNano()
				}
				ev := storage.Event{ID: fmt.Sprintf("msg_%08d", i), TaskID: fmt.Sprint("cgt-", i), Account: fmt.Sprint("acct", i%50),
					URL: receiver.URL, Host: receiver.Listener.Addr().String(), Body: []byte(`{"id":"cgt","status":"succeeded"}`),
					DueAt: dueAt, CreatedAt: start.UnixNano()}
				if _, err := store.EnqueueEvent(context.Background(), ev); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	fill := time.Since(start)

	key, _ := callbacks.ParseSecret(callbacks.NewSecret())
	o := &callbacks.Outbox{Store: store, Key: key, Client: callbacks.NewClient(true), Logger: zap.NewNop()}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { o.Run(stop); close(done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for delivered.Load() < int64(*due) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // let the last acknowledgements land
	pending, err := store.PendingEvents(context.Background())
	if err != nil {
		log.Fatal(err)
	}

	before := cpuTime()
	t0 := time.Now()
	time.Sleep(*idle)
	used := cpuTime() - before
	wall := time.Since(t0)
	close(stop)
	<-done

	fmt.Printf("filled %d events in %v (%.0f acknowledged writes/s with 64 writers)\n", *events, fill.Round(time.Millisecond), float64(*events)/fill.Seconds())
	fmt.Printf("delivered %d due events; %d pending, not due for an hour\n", delivered.Load(), pending)
	fmt.Printf("idle: %v CPU in %v wall = %.3f%% of one core\n", used.Round(time.Millisecond), wall.Round(time.Millisecond), 100*used.Seconds()/wall.Seconds())
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
