package videotask

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestSuccessWithoutResultExpiresAtItsTime: an upstream that reports the task succeeded with a
// video_url that is no result address (file:///etc/passwd) has the task read running, not
// finished, until its execution_expires_after (the contract's default here); then the task
// expires with the code result_missing, once: its slot is released and its cost refunded,
// whether a client's query or the watcher's read reads it (the watcher's memo of unchanged
// answers does not spare the read that finds the time up).
func TestSuccessWithoutResultExpiresAtItsTime(t *testing.T) {
	for _, via := range []string{"query", "watcher"} {
		t.Run(via, func(t *testing.T) {
			u := &taskUpstream{}
			u.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					io.WriteString(w, `{"id":"cgt-race"}`)
					return
				}
				io.WriteString(w, `{"id":"cgt-race","model":"m","status":"succeeded","content":{"video_url":"file:///etc/passwd"},"created_at":1,"updated_at":2}`)
			})
			h, _ := accountedHandler(t, u)
			rec, err := h.Store.Task(context.Background(), "cgt-race")
			if err != nil {
				t.Fatal(err)
			}
			var memo answerMemo
			read := func() {
				t.Helper()
				switch via {
				case "query":
					if r := serve(h, "GET", createPath+"/cgt-race", ""); r.Code != 200 {
						t.Fatalf("query: %d %s", r.Code, r.Body)
					}
				default: // the watcher's read of a record it just read, with its memo
					cur, err := h.Store.Task(context.Background(), "cgt-race")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := h.refreshLogged(context.Background(), cur, &memo); err != nil {
						t.Fatal(err)
					}
				}
			}
			deadline := time.Unix(rec.CreatedAt, 0).Add(adaptor.DefaultExecutionExpiresAfter * time.Second)
			// Reads an hour apart (the watcher's Interval): none is spared as read just before.
			clock := deadline.Add(-4 * time.Hour)
			h.Now = clockAt(&clock)
			for range 3 {
				read() // the same answer again: the watcher's memo of unchanged answers would know it
				clock = clock.Add(time.Hour)
			}
			if got, _ := h.Store.Task(context.Background(), "cgt-race"); got.Finished || got.Status != StatusRunning || strings.Contains(string(got.Result), "passwd") {
				t.Fatalf("within its time: status %q finished %v result %s; want running without the address", got.Status, got.Finished, got.Result)
			}
			clock = deadline.Add(time.Hour)
			read()
			got, err := h.Store.Task(context.Background(), "cgt-race")
			if err != nil || got.Status != StatusExpired || !strings.Contains(string(got.Result), `"code":"result_missing"`) || strings.Contains(string(got.Result), "passwd") {
				t.Fatalf("past its time: %+v %v; want it expired with result_missing", got, err)
			}
			assertFinished(t, h.Store)
			read() // a second reader changes nothing and gives back nothing more
			assertFinished(t, h.Store)
		})
	}
}
