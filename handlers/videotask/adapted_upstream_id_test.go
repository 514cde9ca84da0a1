package videotask

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// A provider reached through an adaptor that answers two accounts' creates with one task id (a
// cache that folds identical creates) gives that id to one gateway task only: of two creates
// racing through two instances sharing the store, one is answered its task and the other 502
// invalid_response without an id, and nothing is cancelled upstream on its behalf. Run on Redis
// (two clients of one server) and Badger.
func TestAdaptedUpstreamIDFollowedByOneTask(t *testing.T) {
	for name, open := range twoInstanceStores {
		t.Run(name, func(t *testing.T) {
			var cancels atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/cancel") {
					cancels.Add(1)
				}
				if r.Method == http.MethodPost {
					io.WriteString(w, `{"output":{"task_id":"ds-folded","task_status":"PENDING"},"request_id":"r"}`)
					return
				}
				io.WriteString(w, `{"output":{"task_id":"ds-folded","task_status":"RUNNING"},"request_id":"r"}`)
			}))
			t.Cleanup(srv.Close)
			base, _ := url.Parse(srv.URL + "/api/v1")
			storeA, storeB := open(t)
			instance := func(store storage.Store) *Handler {
				cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"wan"}}})
				if err != nil {
					t.Fatal(err)
				}
				return &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 5 * time.Second}, Logger: zap.NewNop()}
			}
			a, b := instance(storeA), instance(storeB)
			const body = `{"model":"wan","content":[{"type":"text","text":"a lighthouse"}]}`
			var wg sync.WaitGroup
			answers := make([]*httptest.ResponseRecorder, 2)
			for i, h := range []*Handler{a, b} {
				wg.Go(func() { answers[i] = serveAccount(h, []string{"alice", "bob"}[i], "POST", createPath, body) })
			}
			wg.Wait()
			var made []string
			for _, w := range answers {
				switch w.Code {
				case http.StatusOK:
					made = append(made, decode(t, w)["id"].(string))
				case http.StatusBadGateway:
					if code := decode(t, w)["code"]; code != "invalid_response" || strings.Contains(w.Body.String(), "cgt-") {
						t.Fatalf("refused create: %s; want invalid_response without an id", w.Body)
					}
				default:
					t.Fatalf("create: %d %s", w.Code, w.Body)
				}
			}
			if len(made) != 1 {
				t.Fatalf("%d tasks follow the one upstream task; want 1", len(made))
			}
			time.Sleep(100 * time.Millisecond) // a cancel would be sent at once
			if n := cancels.Load(); n != 0 {
				t.Fatalf("%d cancels reached the provider on the refused create's behalf", n)
			}
			rec, err := a.Store.Task(context.Background(), made[0])
			if err != nil || rec.UpstreamID != "ds-folded" || !rec.Unfinished() {
				t.Fatalf("the task made: %+v, %v", rec, err)
			}
		})
	}
}
