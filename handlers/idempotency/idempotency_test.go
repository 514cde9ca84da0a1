package idempotency

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	if _, _, err := store.BeginIdempotent(t.Context(), "acct/"+HashOf("k3"), storage.IdempotencyRecord{Owner: "other", InFlight: true, RequestHash: HashOf("POST", "/tasks", []byte("a"))}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if w := send("k3", "a"); w.Code != 409 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("in flight = %d", w.Code)
	}
}

// TestGuardLargeAnswers: an answer up to MaxAnswer is replayed whole, written in many pieces; a
// larger one spends its key: a retry is not run again, and gets 409 idempotency_answer_not_kept
// with X-Should-Retry: false (what the OpenAI SDKs read before retrying a 409).
func TestGuardLargeAnswers(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop(), MaxAnswer: 64 << 10}
	var runs atomic.Int64
	answer := ""
	next := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		MarkForwarded(r.Context())
		w.Header().Set("Content-Type", "application/json")
		for rest := answer; rest != ""; {
			n := min(len(rest), 4096)
			w.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
	}
	send := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader("edit"))
		r.Header.Set(Header, key)
		w := httptest.NewRecorder()
		g.Serve(w, r, "acct", apierror.OpenAIShape, 1<<20, next)
		return w
	}

	answer = `{"data":[{"b64_json":"` + strings.Repeat("A", 64<<10-30) + `"}]}`
	if len(answer) > 64<<10 {
		t.Fatalf("answer of %d bytes, want at most the bound", len(answer))
	}
	first := send("whole")
	answer = "changed"
	again := send("whole")
	if runs.Load() != 1 || again.Code != 200 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("answer at the bound: runs %d, retry %d of %d bytes (replayed %q), want one run and the first answer whole",
			runs.Load(), again.Code, again.Body.Len(), again.Header().Get("Idempotent-Replayed"))
	}

	answer = `{"data":[{"b64_json":"` + strings.Repeat("A", 64<<10) + `"}]}`
	if w := send("large"); w.Code != 200 || w.Body.String() != answer {
		t.Fatalf("first answer past the bound = %d of %d bytes, want it whole", w.Code, w.Body.Len())
	}
	for range 2 {
		w := send("large")
		var body struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 409 || body.Error.Code != "idempotency_answer_not_kept" || w.Header().Get("X-Should-Retry") != "false" ||
			!strings.Contains(body.Error.Message, strconv.Itoa(len(answer))) || runs.Load() != 2 {
			t.Fatalf("retry past the bound = %d %s (X-Should-Retry %q), runs %d; want 409 idempotency_answer_not_kept naming its %d bytes, not run again",
				w.Code, w.Body, w.Header().Get("X-Should-Retry"), runs.Load(), len(answer))
		}
	}
	if w := send("other"); w.Code != 200 || runs.Load() != 3 {
		t.Fatalf("another key = %d, runs %d; want it run", w.Code, runs.Load())
	}
}
