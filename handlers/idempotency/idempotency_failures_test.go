package idempotency

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestGuardKeepsItsKeyWhenTheStoreRefusesTheAnswer: a Redis whose maxmemory a 6 MiB answer's
// record does not fit ("OOM command not allowed") refuses to keep it; the key is spent all the
// same, kept without its answer, so the client's retries are not made (and charged) again but get
// 409 idempotency_answer_not_kept. Before, the key was freed and the retry ran again. The record
// holds that 409 as its answer, status and body, which is what a gateway of an earlier version
// replays.
func TestGuardKeepsItsKeyWhenTheStoreRefusesTheAnswer(t *testing.T) {
	server := testredis.Start(t, testredis.Options{Args: []string{"--maxmemory", "5mb", "--maxmemory-policy", "noeviction"}})
	store, err := storage.OpenRedis(t.Context(), storage.RedisOptions{URL: server.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop()}
	var runs atomic.Int64
	answer := `{"data":[{"b64_json":"` + strings.Repeat("A", 6<<20) + `"}]}`
	next := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		MarkForwarded(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}
	send := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(`{"model":"m"}`))
		r.Header.Set(Header, "k")
		w := httptest.NewRecorder()
		g.Serve(w, r, "acct", apierror.OpenAIShape, 1<<20, next)
		return w
	}
	if w := send(); w.Code != 200 || w.Body.Len() != len(answer) {
		t.Fatalf("first = %d of %d bytes", w.Code, w.Body.Len())
	}
	w := send()
	var body struct{ Error struct{ Code string } }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	if w.Code != 409 || body.Error.Code != "idempotency_answer_not_kept" || w.Header().Get("X-Should-Retry") != "false" || runs.Load() != 1 {
		t.Fatalf("retry after the store refused the answer = %d %.300s, run %d times; want 409 idempotency_answer_not_kept, one run", w.Code, w.Body, runs.Load())
	}
	rec, began, err := store.BeginIdempotent(t.Context(), "acct/"+HashOf("k"), storage.IdempotencyRecord{Owner: "other", InFlight: true}, time.Minute)
	if err != nil || began || rec.Status != 409 || !strings.Contains(string(rec.Body), "idempotency_answer_not_kept") || !rec.Unkept {
		t.Fatalf("the spent key's record = status %d, %q, unkept %v (%v, %v); want the 409 as its answer", rec.Status, rec.Body, rec.Unkept, began, err)
	}
}

// TestGuardFreesThePanickedRequestsKey: a handler that panics (net/http recovers and goes on)
// stops its key's renewals, so the key is free once its lease ran out, as a gateway killed
// mid-request frees it. Before, the renewals went on for the life of the process and every retry
// got 409 idempotency_in_progress.
func TestGuardFreesThePanickedRequestsKey(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop(), Lease: MinLease}
	send := func(next http.HandlerFunc) {
		r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader("a"))
		r.Header.Set(Header, "k")
		defer func() { _ = recover() }() // as net/http's server does
		g.Serve(httptest.NewRecorder(), r, "acct", apierror.OpenAIShape, 1<<20, next)
	}
	send(func(w http.ResponseWriter, r *http.Request) {
		MarkForwarded(r.Context())
		panic("a bug in a handler")
	})
	ran := false
	for deadline := time.Now().Add(3 * MinLease); !ran && time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		send(func(w http.ResponseWriter, r *http.Request) { ran = true; w.WriteHeader(200) })
	}
	if !ran {
		t.Fatal("the panicked request's key was still in flight three leases later")
	}
}
