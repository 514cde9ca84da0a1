package videotask

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// An upstream that answers a create with the id of a task already recorded (a caching proxy in
// front of the provider, a provider that folds identical creates into one, a reused id) must not
// make the gateway act on that task: it is another account's, or an earlier one of this account,
// and a DELETE of it upstream would cancel or erase it. The create fails without the id, and the
// record stays its owner's.
func TestCreateWithAnIDAlreadyRecordedLeavesThatTaskAlone(t *testing.T) {
	for _, owner := range []string{"other", "acme"} {
		t.Run("recorded for "+owner, func(t *testing.T) {
			var deletes atomic.Int64
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					deletes.Add(1)
				}
				io.WriteString(w, `{"id":"cgt-taken"}`)
			})
			h := newHandler(t, up.URL, nil)
			first := storage.Task{ID: "cgt-taken", Kind: storage.KindVideo, Account: owner, KeyID: "k-first", Provider: "p", Model: "m",
				Status: StatusQueued, CreatedAt: time.Now().Unix()}
			if _, err := h.Store.CreateTask(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			w := serve(h, "POST", createPath, createBody)
			time.Sleep(200 * time.Millisecond) // a cancel would be sent at once
			if n := deletes.Load(); n != 0 {
				t.Fatalf("the gateway sent %d DELETE of the task already recorded", n)
			}
			if w.Code != http.StatusBadGateway || decode(t, w)["code"] != "invalid_response" || strings.Contains(w.Body.String(), "cgt-taken") {
				t.Fatalf("got %d %s; want 502 invalid_response without the id", w.Code, w.Body)
			}
			got, err := h.Store.Task(context.Background(), "cgt-taken")
			if err != nil || got.Account != owner || got.KeyID != "k-first" || got.Status != StatusQueued {
				t.Fatalf("record after the create: %+v, %v", got, err)
			}
		})
	}
}
