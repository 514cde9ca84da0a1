package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
)

// acceptedPriceCaddyfile prices two video models of a fake Ark upstream by video tokens, a
// duration of -1 held at 3 s; {{prices}} is replaced by the price blocks, again at a reload.
const acceptedPriceCaddyfile = `{
	{{globals}}
	mediagw {
		{{storage}}
		provider ark {
			base_url {{ark}}/api/v3
			api_key ark-key
			models ark-raised ark-removed
		}
		{{prices}}
		key mg-accepted {
			account accepted
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}
`

// TestTaskChargedAtItsAcceptedPrice: a task is charged at the price in force when it was
// accepted, on both stores. Two tasks are accepted at 10 per million video tokens; then a reload
// raises one model's price to 20 and removes the other's; the upstream reports 108,900 tokens
// for each, and each is charged 1.089 at the price it was accepted at: not 2.178 at the new
// price, nor its estimate held for want of a price.
func TestTaskChargedAtItsAcceptedPrice(t *testing.T) {
	redis := testredis.Start(t, testredis.Options{})
	price := func(model, amount string) string {
		return "price " + model + " {\n\t\t\tvideo_tokens " + amount + "\n\t\t\tmax_seconds 3\n\t\t}\n\t\t"
	}
	for _, store := range []struct{ name, line string }{
		{"badger", "storage badger " + t.TempDir()},
		{"redis", "storage redis " + redis.URL() + " {\n\t\t\tkey_prefix accepted\n\t\t}"},
	} {
		t.Run(store.name, func(t *testing.T) {
			ark := newArkHeld(t)
			base, g := startSimGateway(t, acceptedPriceCaddyfile, map[string]string{"storage": store.line, "ark": ark.URL,
				"prices": price("ark-raised", "10") + price("ark-removed", "10")})
			e := keysEnv{g: g}
			e.credit(t, "accepted", "10", "accepted-1")
			var ids []string
			for _, model := range []string{"ark-raised", "ark-removed"} {
				r := call(t, "POST", base+taskPath, "mg-accepted", `{"model":"`+model+`","content":[{"type":"text","text":"v"}],"duration":-1}`)
				if r.status != 200 || r.field("id") == "" {
					t.Fatalf("create %s = %d %s", model, r.status, r.body)
				}
				ids = append(ids, r.field("id"))
			}
			held := e.admin(t, "GET", "/mediagw/accounts/accepted/balance", nil).field("held")
			if held == "0" || held == "2.178" {
				t.Fatalf("held %s after the creates; want the estimate of 3 s, not 2 × 1.089", held)
			}
			g.vars["prices"] = price("ark-raised", "20")
			if err := g.reload(acceptedPriceCaddyfile); err != nil {
				t.Fatal(err)
			}
			ark.done.Store(true)
			deadline := time.Now().Add(20 * time.Second)
			for {
				done := 0
				for _, id := range ids {
					if r := call(t, "GET", base+taskPath+"/"+id, "mg-accepted", nil); r.field("status") == "succeeded" {
						done++
					}
				}
				r := e.admin(t, "GET", "/mediagw/accounts/accepted/balance", nil)
				if done == len(ids) && r.field("held") == "0" {
					if r.field("balance") != "7.822" {
						t.Fatalf("balance %s; want 7.822: each task charged 1.089, 108,900 tokens at the 10 per million it was accepted at", r.body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("tasks not settled: %d of %d succeeded, balance %s", done, len(ids), r.body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			ledgerEntries(t, g, "accepted") // the balance is the sum of the ledger
		})
	}
}

// arkHeld is a fake Ark task upstream (ModelArk's content generation task API: create POST
// …/contents/generations/tasks answering {"id"}; query GET …/tasks/{id}, and the list GET …/tasks
// with filter.task_ids) whose tasks are running until done is set, then succeeded: 5 s of 720p
// video, usage.completion_tokens 108,900.
type arkHeld struct {
	*httptest.Server
	done atomic.Bool
	n    atomic.Int64
}

func newArkHeld(t *testing.T) *arkHeld {
	f := &arkHeld{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *arkHeld) serve(w http.ResponseWriter, r *http.Request) {
	const tasks = "/api/v3/contents/generations/tasks"
	switch {
	case r.Header.Get("Authorization") != "Bearer ark-key":
		writeFakeJSON(w, 401, map[string]any{"error": map[string]string{"code": "AuthenticationError", "message": "bad key"}})
	case r.URL.Path == tasks && r.Method == http.MethodPost:
		writeFakeJSON(w, 200, map[string]string{"id": fmt.Sprintf("cgt-held-%d", f.n.Add(1))})
	case strings.HasPrefix(r.URL.Path, tasks+"/") && r.Method == http.MethodGet:
		writeFakeJSON(w, 200, f.task(strings.TrimPrefix(r.URL.Path, tasks+"/")))
	case r.URL.Path == tasks && r.Method == http.MethodGet:
		items := []map[string]any{}
		for _, id := range r.URL.Query()["filter.task_ids"] {
			items = append(items, f.task(id))
		}
		writeFakeJSON(w, 200, map[string]any{"items": items, "total": len(items)})
	default:
		writeFakeJSON(w, 404, map[string]any{"error": map[string]string{"code": "NotFound", "message": "no such endpoint"}})
	}
}

func (f *arkHeld) task(id string) map[string]any {
	t := map[string]any{"id": id, "model": "seedance-held", "status": "running", "created_at": 1764200000, "updated_at": 1764200000}
	if f.done.Load() {
		t["status"], t["updated_at"] = "succeeded", 1764200060
		t["content"] = map[string]any{"video_url": f.URL + "/files/video.mp4"}
		t["usage"] = map[string]int{"completion_tokens": 108900, "total_tokens": 108900}
		t["duration"], t["resolution"], t["ratio"], t["framespersecond"] = 5, "720p", "16:9", 24
	}
	return t
}
