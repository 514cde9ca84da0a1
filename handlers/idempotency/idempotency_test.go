package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
	// A claim still in flight answers 409.
	store.PutRecord(t.Context(), "idem/acct/"+hashOf("k3"), []byte(`{"in_flight":true,"request_hash":"`+hashOf("POST", "/tasks", []byte("a"))+`"}`), 0)
	if w := send("k3", "a"); w.Code != 409 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("in flight = %d", w.Code)
	}
}
