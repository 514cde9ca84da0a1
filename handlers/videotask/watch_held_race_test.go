package videotask

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// twoInstanceStores open the stores of two instances: two clients of one Redis server (two
// processes), and Badger shared by the two (one process).
var twoInstanceStores = map[string]func(t *testing.T) (storage.Store, storage.Store){
	"badger": func(t *testing.T) (storage.Store, storage.Store) {
		b := openBadger(t)
		return b, b
	},
	"redis": func(t *testing.T) (storage.Store, storage.Store) {
		srv := testredis.Start(t, testredis.Options{})
		open := func() storage.Store {
			r, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL(), Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}
		return open(), open()
	},
}

// Clients' polls through another instance race the watcher, which polls from the records it
// holds, when the tasks fail upstream: each task is finished once, its slot given back once and
// its cost refunded once, whoever wins; the watcher then follows none of them and holds no
// record. Run on Redis with two instances (two clients of one server) and on Badger (the two
// handlers of one process sharing the store).
func TestHeldRecordsRaceClientPolls(t *testing.T) {
	for name, open := range twoInstanceStores {
		t.Run(name, func(t *testing.T) {
			storeA, storeB := open(t)
			clock := testclock.New(time.Unix(1_800_000_000, 0))
			up := newSimUpstream(t, 50*time.Minute, 0, true) // queued at the first poll, failed later
			up.sim.Now = clock.Now
			counting := &readCountingStore{Store: storeA}
			a := newHandler(t, up.URL, counting)
			a.Client.Timeout = 10 * time.Second
			a.Now = clock.Now
			w := &Watcher{Tasks: a, Interval: time.Hour, Owner: "a"}
			w.init()
			w.ownTickAndScan(context.Background())
			a.Watcher = w
			const n = 6
			ids := createFailingTasks(t, a, n)
			b := newHandler(t, up.URL, storeB)
			b.Client.Timeout = 10 * time.Second
			b.Now = clock.Now
			meter := accounting.NewMeter(storeB, time.Hour, zap.NewNop())
			t.Cleanup(meter.Close)
			b.Accounting = &accounting.Accountant{Store: storeB, Meter: meter, Prices: unitPrice(t), Now: clock.Now}

			if calls, _ := pollAfter(t, w, clock, counting, ids); calls != 1 {
				t.Fatalf("first poll made %d upstream calls, want 1", calls)
			}
			// An hour on, the tasks have failed upstream. The watcher's poll (from its held
			// records) and two clients' polls of each task through the other instance race.
			for range 12 {
				clock.Advance(w.Interval / 12)
				w.ownTick(context.Background())
			}
			var wg sync.WaitGroup
			wg.Go(func() { w.poll(context.Background(), ids) })
			for _, id := range ids {
				for range 2 {
					wg.Go(func() {
						if r := serve(b, http.MethodGet, createPath+"/"+id, ""); r.Code != http.StatusOK {
							t.Errorf("client's query of %s: %d %s", id, r.Code, r.Body)
						}
					})
				}
			}
			wg.Wait()
			for _, id := range ids {
				rec, err := storeA.Task(context.Background(), id)
				if err != nil || !rec.Finished || rec.Status != StatusFailed {
					t.Fatalf("record %+v, %v; want failed and finished", rec, err)
				}
			}
			if active, used := counters(t, storeA); active != 0 || used != 0 {
				t.Fatalf("active %d, quota used %d after the failures; want 0 and 0 (each slot and cost given back once)", active, used)
			}
			w.poll(context.Background(), ids) // whatever the race left tracked: read, found finished
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.tracked) != 0 || len(w.records) != 0 || len(w.forgotten) != 0 {
				t.Fatalf("finished tasks still followed: %d tracked, %d records held, %d marked", len(w.tracked), len(w.records), len(w.forgotten))
			}
		})
	}
}
