package idempotency

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// countedStore counts the claims asked of the real store it passes them to.
type countedStore struct {
	storage.Store
	begins atomic.Int64
}

func (s *countedStore) BeginIdempotent(ctx context.Context, key string, rec storage.IdempotencyRecord, ttl time.Duration) (storage.IdempotencyRecord, bool, error) {
	s.begins.Add(1)
	return s.Store.BeginIdempotent(ctx, key, rec, ttl)
}

// TestWaitingRetryAsksTheStoreSeldom: a retry waiting 2 s for a first request that runs longer
// asks the store (a write each time) after 100 ms, then at pauses doubling up to 1 s, and once
// more at the end of its wait: 6 claims, not 20; then it is 409 idempotency_in_progress.
func TestWaitingRetryAsksTheStoreSeldom(t *testing.T) {
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer badger.Close()
	store := &countedStore{Store: badger}
	g := &Guard{Store: store, Logger: zap.NewNop(), Wait: 2 * time.Second}
	release, started := make(chan struct{}), make(chan struct{})
	defer close(release)
	go g.Run(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/videos", nil), "acct", "k", "h", apierror.OpenAIShape, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})
	<-started
	store.begins.Store(0)
	began := time.Now()
	w := httptest.NewRecorder()
	g.Run(w, httptest.NewRequest("POST", "/v1/videos", nil), "acct", "k", "h", apierror.OpenAIShape, nil)
	if w.Code != 409 || !strings.Contains(w.Body.String(), "idempotency_in_progress") {
		t.Fatalf("retry = %d %s, want 409 idempotency_in_progress", w.Code, w.Body)
	}
	if waited := time.Since(began); waited < 1900*time.Millisecond {
		t.Fatalf("the retry waited %v of its 2 s", waited)
	}
	if n := store.begins.Load(); n > 7 {
		t.Fatalf("the waiting retry asked the store %d times in 2 s, want at most 7", n)
	}
}

// TestRetryWhoseClientLeavesIsNoStoreFailure: a retry waiting for its first request whose client
// leaves meanwhile finds the store call failing for its ended context (Redis answers nothing to a
// cancelled call): that is answered 409 idempotency_in_progress, not 500, and logs no error.
func TestRetryWhoseClientLeavesIsNoStoreFailure(t *testing.T) {
	server := testredis.Start(t, testredis.Options{})
	store, err := storage.OpenRedis(t.Context(), storage.RedisOptions{URL: server.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	core, logs := observer.New(zapcore.WarnLevel)
	g := &Guard{Store: store, Logger: zap.New(core), Wait: 2 * time.Second}
	release, started := make(chan struct{}), make(chan struct{})
	defer close(release)
	go g.Run(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/videos", nil), "acct", "k", "h", apierror.OpenAIShape, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client has left by the time the store is asked
	w := httptest.NewRecorder()
	g.Run(w, httptest.NewRequest("POST", "/v1/videos", nil).WithContext(ctx), "acct", "k", "h", apierror.OpenAIShape, nil)
	if w.Code != 409 || !strings.Contains(w.Body.String(), "idempotency_in_progress") {
		t.Errorf("retry whose client left = %d %s, want 409 idempotency_in_progress", w.Code, w.Body)
	}
	if logs.Len() != 0 {
		t.Errorf("logged %d entries, first %q: a client that left is no store failure", logs.Len(), logs.All()[0].Message)
	}
}
