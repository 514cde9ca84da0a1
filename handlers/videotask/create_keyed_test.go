package videotask

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/storage"
)

// TestCreateRetryFindsTheTaskItsKeyRecorded: a gateway (on Badger) that died after writing a
// create's task record, and before keeping the answer under the Idempotency-Key, left the
// record with the key's store key; the retry with that key answers that task, calls nothing
// upstream, and keeps the answer for the next retry. A create with another key makes a task.
func TestCreateRetryFindsTheTaskItsKeyRecorded(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"cgt-made-again"}`))
	})
	h := newHandler(t, up.URL, nil)
	h.Idempotency = &idempotency.Guard{Store: h.Store, Logger: zap.NewNop()}
	now := time.Now()
	recorded := storage.Task{ID: "cgt-recorded", Kind: storage.KindVideo, Account: "acme", KeyID: "k1", Provider: "p",
		Model: "m", Status: StatusQueued, CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(),
		IdempotencyKey: "acme/video-tasks/" + idempotency.HashOf("retry-1")}
	if _, err := h.Store.CreateTask(context.Background(), recorded); err != nil {
		t.Fatal(err)
	}
	create := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", createPath, strings.NewReader(createBody))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i, replayed := range []string{"", "true"} {
		w := create("retry-1")
		if w.Code != 200 || decode(t, w)["id"] != "cgt-recorded" || w.Header().Get("Idempotent-Replayed") != replayed {
			t.Fatalf("retry %d = %d %s (replayed %q); want the recorded task", i, w.Code, w.Body, w.Header().Get("Idempotent-Replayed"))
		}
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("the retries called the upstream %d times; want none", n)
	}
	if w := create("another"); w.Code != 200 || decode(t, w)["id"] != "cgt-made-again" || up.calls.Load() != 1 {
		t.Fatalf("a create with another key = %d %s after %d upstream calls", w.Code, w.Body, up.calls.Load())
	}
}
