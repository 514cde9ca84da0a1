package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The strict fake upstreams of the video task adaptors (fake_dashscope_test.go,
// fake_gemini_test.go) are written from each provider's published API reference, not from the
// adaptors: each refuses, in the provider's own error shape, a request that differs from the
// reference, records every request it received, and runs each task through the provider's
// states, one state per read. The prompt picks a task's script (see scriptOf).

// received is one request a fake upstream received.
type received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	At           time.Time
}

// fakeLog records what a fake upstream received.
type fakeLog struct {
	mu   sync.Mutex
	reqs []received
}

func (l *fakeLog) record(r *http.Request) []byte {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)) // a short body fails the fake's own checks
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
	return body
}

// matching returns the requests whose method and path prefix match.
func (l *fakeLog) matching(method, pathPrefix string) []received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []received
	for _, r := range l.reqs {
		if r.Method == method && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// script is the run of a fake task, chosen by its prompt.
type script string

const (
	scriptSucceed  script = "succeed"  // queued, running, succeeded
	scriptFail     script = "fail"     // queued, running, failed with the provider's error
	scriptUnknown  script = "unknown"  // a state the provider documents as unknown, forever
	scriptThrottle script = "throttle" // the first read is a 429, then as succeed
	scriptSlow     script = "slow"     // queued (or not done) until cancelled
)

// scriptOf reads the script from a prompt that contains "[script]"; default: succeed.
func scriptOf(prompt string) script {
	for _, s := range []script{scriptFail, scriptUnknown, scriptThrottle, scriptSlow} {
		if strings.Contains(prompt, "["+string(s)+"]") {
			return s
		}
	}
	return scriptSucceed
}

// decodeStrict decodes body into v, refusing unknown fields and trailing data, as the providers'
// JSON parsers do.
func decodeStrict(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func writeFakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a test fake: a failed write shows as the gateway's error
}

// startFake serves h on a loopback port for the test's duration.
func startFake(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// fakeTask is one task of a fake upstream.
type fakeTask struct {
	script script
	// kind is the endpoint that made it, for a provider whose reads name it (Kling).
	kind      string
	reads     int
	cancelled bool
}

// fakeTasks are a fake upstream's tasks by id.
type fakeTasks struct {
	mu    sync.Mutex
	tasks map[string]*fakeTask
	next  int
}

// add records a task under the id that id makes of its number (1, 2, …) and returns the id.
func (ts *fakeTasks) add(id func(n int) string, t fakeTask) string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tasks == nil {
		ts.tasks = map[string]*fakeTask{}
	}
	ts.next++
	name := id(ts.next)
	ts.tasks[name] = &t
	return name
}

// step counts a read of the task and returns it with the step of its script the read shows:
// 1 for the first state, 2 for the next, and so on. A throttle script's first read is step 0,
// which the fake answers with its 429; its later reads show the steps from 1. ok is false for an
// unknown id.
func (ts *fakeTasks) step(id string) (t fakeTask, step int, ok bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	p, ok := ts.tasks[id]
	if !ok {
		return fakeTask{}, 0, false
	}
	p.reads++
	step = p.reads
	if p.script == scriptThrottle {
		step--
	}
	return *p, step, true
}

// cancel marks the task cancelled if allowed says it may be, and reports whether it did.
func (ts *fakeTasks) cancel(id string, allowed func(fakeTask) bool) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	p, ok := ts.tasks[id]
	if !ok || p.cancelled || !allowed(*p) {
		return false
	}
	p.cancelled = true
	return true
}
