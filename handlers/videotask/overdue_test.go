package videotask

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// TestOverdueTaskExpires: a task its upstream still calls running after the longest time a task
// may run (storage.MaxTaskRun) is finished as expired by the gateway, once: its slot is released
// and its cost refunded before its record expires, whether a client's query or the watcher
// reads it. Before that bound it is followed as usual.
func TestOverdueTaskExpires(t *testing.T) {
	for _, via := range []string{"query", "watcher"} {
		t.Run(via, func(t *testing.T) {
			u := newTaskUpstream(t, "running")
			h, _ := accountedHandler(t, u)
			rec, err := h.Store.Task(context.Background(), "cgt-race")
			if err != nil {
				t.Fatal(err)
			}
			read := func() {
				t.Helper()
				switch via {
				case "query":
					if w := serve(h, "GET", createPath+"/cgt-race", ""); w.Code != 200 {
						t.Fatalf("query: %d %s", w.Code, w.Body)
					}
				default:
					w := &Watcher{Tasks: h, Interval: time.Hour}
					w.init()
					w.ownTickAndScan(context.Background())
					w.poll(context.Background(), []string{"cgt-race"})
				}
			}
			clock := time.Unix(rec.CreatedAt, 0).Add(storage.MaxTaskRun - time.Hour)
			h.Now = clockAt(&clock)
			read()
			if got, _ := h.Store.Task(context.Background(), "cgt-race"); got.Finished || got.Status != "running" {
				t.Fatalf("a task within its run time: status %q finished %v; want it running", got.Status, got.Finished)
			}
			clock = time.Unix(rec.CreatedAt, 0).Add(storage.MaxTaskRun + time.Hour)
			read()
			got, err := h.Store.Task(context.Background(), "cgt-race")
			if err != nil || got.Status != StatusExpired || !strings.Contains(string(got.Result), `"expired"`) {
				t.Fatalf("an overdue task: %+v %v; want it expired", got, err)
			}
			assertFinished(t, h.Store)
			read() // a second reader changes nothing and gives back nothing more
			assertFinished(t, h.Store)
		})
	}
}
