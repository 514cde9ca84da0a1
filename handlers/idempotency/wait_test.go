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

// TestRetryWaitsForItsFirstRequest: with Wait, a retry that finds its key in flight waits for the
// first request: it gets the first answer replayed when that one kept it, runs itself when the
// first kept nothing (its key freed), and gets 409 once Wait has passed; a retry with another
// body is refused 422 at once.
func TestRetryWaitsForItsFirstRequest(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop(), Wait: 2 * time.Second}
	send := func(key, body string, next http.HandlerFunc) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/videos", strings.NewReader(body))
		w := httptest.NewRecorder()
		g.Run(w, r, "acct", key, HashOf(body), apierror.OpenAIShape, next)
		return w
	}
	first := func(status int, release <-chan struct{}, started chan<- struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			MarkForwarded(r.Context())
			close(started)
			<-release
			w.WriteHeader(status)
			w.Write([]byte(`{"id":"video_1"}`))
		}
	}
	var ran atomic.Int32
	retry := func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		MarkForwarded(r.Context())
		w.Write([]byte(`{"id":"video_2"}`))
	}
	for _, c := range []struct {
		name       string
		status     int // the first request's answer
		body       string
		hold       time.Duration // how long the first request runs after the retry came
		wantStatus int
		wantBody   string
		wantRan    int32
	}{
		{"replayed", 200, "a", 300 * time.Millisecond, 200, `{"id":"video_1"}`, 0},
		{"first kept nothing", 503, "a", 300 * time.Millisecond, 200, `{"id":"video_2"}`, 1},
		{"waited too long", 200, "a", 3 * time.Second, 409, "idempotency_in_progress", 0},
		// The first runs 3 s: a retry answered 422 only once the first ended would take that long.
		{"another body", 200, "b", 3 * time.Second, 422, "idempotency_key_reused", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran.Store(0)
			key := "k-" + c.name
			release, started, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() { send(key, "a", first(c.status, release, started)); close(done) }()
			<-started
			go func() { time.Sleep(c.hold); close(release) }()
			began := time.Now()
			w := send(key, c.body, retry)
			took := time.Since(began) // the retry's own time, not the first's
			<-done
			if w.Code != c.wantStatus || !strings.Contains(w.Body.String(), c.wantBody) || ran.Load() != c.wantRan {
				t.Fatalf("retry = %d %s (ran %d); want %d %s (ran %d)", w.Code, w.Body, ran.Load(), c.wantStatus, c.wantBody, c.wantRan)
			}
			if c.wantStatus == 422 && took > 2*time.Second {
				t.Fatalf("a retry with another body waited %v", took)
			}
			if c.wantStatus == 200 && c.wantRan == 0 && w.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatal("the replay is not marked Idempotent-Replayed")
			}
		})
	}
}
