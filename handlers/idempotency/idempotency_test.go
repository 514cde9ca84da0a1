package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

func TestGuard(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop()}
	var runs atomic.Int64
	status := http.StatusOK
	next := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if status != http.StatusTooManyRequests {
			MarkForwarded(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"id":"t` + string(rune('0'+runs.Load())) + `"}`))
	}
	send := func(key, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/tasks", strings.NewReader(body))
		if key != "" {
			r.Header.Set(Header, key)
		}
		w := httptest.NewRecorder()
		g.Serve(w, r, "acct", apierror.TaskShape, 1<<20, next)
		return w
	}

	if w := send("", "a"); w.Code != 200 || runs.Load() != 1 {
		t.Fatal("without a key the request must just run")
	}
	first := send("k1", "a")
	again := send("k1", "a")
	if runs.Load() != 2 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: runs %d, %q vs %q", runs.Load(), again.Body, first.Body)
	}
	if w := send("k1", "b"); w.Code != 422 || runs.Load() != 2 {
		t.Fatalf("other body = %d", w.Code)
	}
	for name, values := range map[string][]string{"empty": {""}, "repeated": {"k2", "k3"}, "repeated alike": {"k2", "k2"}} {
		r := httptest.NewRequest("POST", "/tasks", strings.NewReader("a"))
		r.Header[Header] = values
		w := httptest.NewRecorder()
		g.Serve(w, r, "acct", apierror.TaskShape, 1<<20, next)
		if w.Code != 400 || runs.Load() != 2 {
			t.Fatalf("%s Idempotency-Key = %d, runs %d; want 400 and no run", name, w.Code, runs.Load())
		}
	}
	if w := send(strings.Repeat("x", 256), "a"); w.Code != 400 {
		t.Fatalf("long key = %d", w.Code)
	}
	if w := send("bad\x01key", "a"); w.Code != 400 {
		t.Fatalf("control character = %d", w.Code)
	}
	// A 5xx answer is not kept: the same key runs again.
	status = http.StatusBadGateway
	send("k2", "a")
	status = http.StatusOK
	if w := send("k2", "a"); w.Code != 200 || runs.Load() != 4 {
		t.Fatalf("after a 5xx: %d, runs %d", w.Code, runs.Load())
	}
	// A 429 the gateway gave on its own is not kept: a retry with the same key goes through.
	status = http.StatusTooManyRequests
	if w := send("k4", "a"); w.Code != 429 {
		t.Fatalf("limited = %d", w.Code)
	}
	status = http.StatusOK
	if w := send("k4", "a"); w.Code != 200 || w.Header().Get("Idempotent-Replayed") != "" || runs.Load() != 6 {
		t.Fatalf("retry after a 429: %d, replayed %q, runs %d", w.Code, w.Header().Get("Idempotent-Replayed"), runs.Load())
	}
	// An upstream's own 400 (the request was forwarded) is kept.
	status = http.StatusBadRequest
	send("k5", "a")
	status = http.StatusOK
	if w := send("k5", "a"); w.Code != 400 || w.Header().Get("Idempotent-Replayed") != "true" || runs.Load() != 7 {
		t.Fatalf("forwarded 400 not kept: %d, runs %d", w.Code, runs.Load())
	}
	// A claim still in flight answers 409.
	if _, _, err := store.BeginIdempotent(t.Context(), "acct/"+hashOf("k3"), storage.IdempotencyRecord{Owner: "other", InFlight: true, RequestHash: hashOf("POST", "/tasks", []byte("a"))}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if w := send("k3", "a"); w.Code != 409 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("in flight = %d", w.Code)
	}
}
