package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// TestLeaseRenewedWhileRunning: a request that runs for several leases keeps its key (a retry
// meanwhile gets 409), and its answer is kept for replay afterwards.
func TestLeaseRenewedWhileRunning(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// MinLease: Badger counts expiry in whole seconds, so a shorter lease can run out before its
	// first renewal on a loaded machine.
	g := &Guard{Store: store, Logger: zap.NewNop(), Lease: MinLease}
	release := make(chan struct{})
	next := func(w http.ResponseWriter, r *http.Request) {
		MarkForwarded(r.Context())
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"id":"slow"}`))
	}
	send := func(h http.HandlerFunc) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/tasks", strings.NewReader("a"))
		r.Header.Set(Header, "k")
		w := httptest.NewRecorder()
		g.Serve(w, r, "acct", apierror.TaskShape, 1<<20, h)
		return w
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- send(next) }()
	ran := false
	other := func(w http.ResponseWriter, r *http.Request) { ran = true; w.WriteHeader(201) }
	for range 5 { // 5 × 700ms: past a lease that was not renewed
		time.Sleep(700 * time.Millisecond)
		if w := send(other); w.Code != http.StatusConflict || ran {
			t.Fatalf("a retry while the first request runs = %d (ran %v); want 409, the lease renewed", w.Code, ran)
		}
	}
	close(release)
	if w := <-done; w.Code != 200 {
		t.Fatalf("first = %d", w.Code)
	}
	if w := send(other); w.Code != 200 || w.Header().Get("Idempotent-Replayed") != "true" || ran {
		t.Fatalf("after the first ended = %d replayed %q ran %v; want its answer replayed", w.Code, w.Header().Get("Idempotent-Replayed"), ran)
	}
}

// TestLostLeaseIsNotRenewedNorOverwritten: when a request's key was taken by another owner
// (its lease ran out while the store was unreachable), the first request neither renews the
// key back nor stores its answer over the new owner's.
func TestLostLeaseIsNotRenewedNorOverwritten(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop(), Lease: 2 * time.Second} // Badger's expiry counts whole seconds
	storeKey := "acct/" + HashOf("k")
	reqHash := HashOf("POST", "/tasks", []byte("a"))
	next := func(w http.ResponseWriter, r *http.Request) {
		MarkForwarded(r.Context())
		// Another gateway takes the key over, as after a lost lease.
		rec, _, err := store.BeginIdempotent(r.Context(), storeKey, storage.IdempotencyRecord{}, time.Minute)
		if err != nil || !rec.InFlight {
			t.Errorf("the first request's record = %+v, %v", rec, err)
		}
		if err := store.AbandonIdempotent(r.Context(), storeKey, rec.Owner); err != nil {
			t.Error(err)
		}
		if _, began, err := store.BeginIdempotent(r.Context(), storeKey, storage.IdempotencyRecord{Owner: "new", InFlight: true, RequestHash: reqHash}, time.Minute); err != nil || !began {
			t.Errorf("take over = %v, %v", began, err)
		}
		time.Sleep(1500 * time.Millisecond) // two renewals fall due
		w.WriteHeader(http.StatusOK)
	}
	r := httptest.NewRequest("POST", "/tasks", strings.NewReader("a"))
	r.Header.Set(Header, "k")
	g.Serve(httptest.NewRecorder(), r, "acct", apierror.TaskShape, 1<<20, next)
	rec, began, err := store.BeginIdempotent(t.Context(), storeKey, storage.IdempotencyRecord{Owner: "probe", InFlight: true}, time.Minute)
	if err != nil || began || rec.Owner != "new" || !rec.InFlight {
		t.Fatalf("record after the old owner ended = %+v (began %v, %v); want the new owner's, still in flight", rec, began, err)
	}
}

// TestEarlierUnkeptRecordIsAnswered409: a key spent by an earlier version without its answer
// (Unkept, the first answer's status 200, no body) is answered 409 idempotency_answer_not_kept
// with X-Should-Retry: false, never an empty 200 replayed as the answer, and the request is not
// made again.
func TestEarlierUnkeptRecordIsAnswered409(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop()}
	storeKey := "acct/" + HashOf("k")
	reqHash := requestHash("POST", "/tasks", "", []byte("a"))
	if _, began, err := store.BeginIdempotent(t.Context(), storeKey, storage.IdempotencyRecord{Owner: "old", InFlight: true, RequestHash: reqHash}, time.Minute); err != nil || !began {
		t.Fatalf("begin = %v, %v", began, err)
	}
	if err := store.CompleteIdempotent(t.Context(), storeKey, storage.IdempotencyRecord{Owner: "old", RequestHash: reqHash, Status: http.StatusOK, Unkept: true}, time.Hour); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/tasks", strings.NewReader("a"))
	r.Header.Set(Header, "k")
	w := httptest.NewRecorder()
	g.Serve(w, r, "acct", apierror.TaskShape, 1<<20, func(http.ResponseWriter, *http.Request) { t.Error("the spent request was made again") })
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "idempotency_answer_not_kept") || w.Header().Get("X-Should-Retry") != "false" {
		t.Fatalf("retry of an earlier unkept record = %d %s (X-Should-Retry %q); want 409 idempotency_answer_not_kept", w.Code, w.Body, w.Header().Get("X-Should-Retry"))
	}
}
