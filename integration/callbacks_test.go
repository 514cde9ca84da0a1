package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/callbacks"
)

const callbacksCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
		}
		key mg-hooks {
			account hooks
		}
		watcher {
			interval 100ms
			max_rps 200
		}
		callbacks {
			{{allow_private}}
			retry_schedule 200ms 200ms 200ms 200ms
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 400ms
		running_for 400ms
		api_key sim-key
	}
}
`

// delivery is one callback attempt as the receiver saw it.
type delivery struct {
	id, timestamp, signature string
	method, contentType      string
	body                     []byte
	status                   string
}

// receiver is a callback endpoint on loopback. answer decides the status of each attempt.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	attempts []delivery
	answer   func(n int) int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Status string `json:"status"`
		}
		json.Unmarshal(body, &m)
		rc.mu.Lock()
		rc.attempts = append(rc.attempts, delivery{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"),
			r.Method, r.Header.Get("Content-Type"), body, m.Status})
		n := len(rc.attempts)
		rc.mu.Unlock()
		w.WriteHeader(rc.answer(n))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) seen() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.attempts...)
}

// waitFor polls cond for up to 60 s (generous for a loaded machine: it returns as soon as cond
// holds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startCallbackGateway(t *testing.T, allowPrivate bool) (base string, g *gateway) {
	allow := ""
	if allowPrivate {
		allow = "allow_private"
	}
	return startSimGateway(t, callbacksCaddyfile, map[string]string{"allow_private": allow})
}

func createWithCallback(t *testing.T, base, prompt, url string) string {
	t.Helper()
	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-hooks",
		fmt.Sprintf(`{"model":"sim-video","content":[{"type":"text","text":%q}],"callback_url":%q}`, prompt, url))
	id, _ := r.json(t)["id"].(string)
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return id
}

func accountSecret(t *testing.T, g *gateway, account string) string {
	r := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/"+account, "", nil)
	secret, _ := r.json(t)["webhook_secret"].(string)
	if secret == "" {
		t.Fatalf("no webhook secret: %s", r.body)
	}
	return secret
}

// steppedUpstream is an Ark-style upstream holding one task whose status the test sets, so that
// the gateway sees each status however slowly its watcher runs (the simulator's timed phases
// can pass unseen on a loaded machine).
type steppedUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	status  string
	created int64
}

func newSteppedUpstream(t *testing.T) *steppedUpstream {
	u := &steppedUpstream{status: "queued", created: time.Now().Unix()}
	const id = "cgt-stepped-1"
	view := func() map[string]any {
		u.mu.Lock()
		defer u.mu.Unlock()
		v := map[string]any{"id": id, "model": "sim-video", "status": u.status, "error": nil,
			"created_at": u.created, "updated_at": u.created}
		if u.status == "succeeded" {
			v["content"] = map[string]string{"video_url": "https://videos.example.com/" + id + ".mp4"}
			v["usage"] = map[string]int{"completion_tokens": 100, "total_tokens": 100}
		}
		return v
	}
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	const path = "/api/v3/contents/generations/tasks"
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == path:
			answer(w, map[string]string{"id": id})
		case r.Method == http.MethodGet && r.URL.Path == path+"/"+id:
			answer(w, view())
		case r.Method == http.MethodGet && r.URL.Path == path:
			answer(w, map[string]any{"items": []any{view()}, "total": 1})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *steppedUpstream) set(status string) {
	u.mu.Lock()
	u.status = status
	u.mu.Unlock()
}

func TestSignedCallbacksFollowTheTask(t *testing.T) {
	up := newSteppedUpstream(t)
	base, g := startSimGateway(t, strings.Replace(callbacksCaddyfile, "http://127.0.0.1:{{sim_port}}/api/v3", up.URL+"/api/v3", 1),
		map[string]string{"allow_private": "allow_private"})
	rc := newReceiver(t, func(int) int { return 204 })
	id := createWithCallback(t, base, "watch me", rc.URL+"/hooks?token=abc")
	for _, status := range []string{"queued", "running", "succeeded"} {
		up.set(status)
		waitFor(t, "the "+status+" callback", func() bool {
			s := rc.seen()
			return len(s) > 0 && s[len(s)-1].status == status
		})
	}
	secret := accountSecret(t, g, "hooks")
	var statuses []string
	ids := map[string]bool{}
	for _, d := range rc.seen() {
		if err := callbacks.Verify(secret, d.id, d.timestamp, d.signature, d.body, 5*time.Minute); err != nil {
			t.Fatalf("callback %s does not verify: %v", d.status, err)
		}
		// Spec §6: a POST whose body is the §2.5 query answer, as JSON.
		if d.method != http.MethodPost || d.contentType != "application/json" {
			t.Fatalf("callback %s was %s with Content-Type %q, want POST application/json", d.status, d.method, d.contentType)
		}
		statuses = append(statuses, d.status)
		ids[d.id] = true
	}
	if !reflect.DeepEqual(statuses, []string{"queued", "running", "succeeded"}) || len(ids) != 3 {
		t.Fatalf("callbacks = %v with %d ids", statuses, len(ids))
	}
	// The body is exactly the query answer.
	var got, want map[string]any
	json.Unmarshal(rc.seen()[2].body, &got)
	want = call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-hooks", nil).json(t)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("callback body %v\nquery answer %v", got, want)
	}
	// The watcher kept the stored status current without any client poll in between.
	if list := call(t, "GET", base+"/api/v3/contents/generations/tasks?filter.status=succeeded", "mg-hooks", nil).json(t); list["total"] != float64(1) {
		t.Fatalf("list = %v", list)
	}
}

func TestCallbackRetriesThenSucceeds(t *testing.T) {
	base, _ := startCallbackGateway(t, true)
	var mu sync.Mutex
	failures := map[string]int{}
	var rc *receiver
	rc = newReceiver(t, func(n int) int {
		// Fail the first two attempts of each event.
		d := rc.seen()[n-1]
		mu.Lock()
		defer mu.Unlock()
		failures[d.id]++
		if failures[d.id] <= 2 {
			return 503
		}
		return 200
	})
	createWithCallback(t, base, "fail then ok [[fail]]", rc.URL)
	// Events are delivered in no set order: the earlier ones may still be retried when the
	// failed one is delivered. Wait for every event seen to have its third attempt.
	waitFor(t, "every callback to be delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		failedSeen := false
		for _, d := range rc.seen() {
			failedSeen = failedSeen || d.status == "failed"
			if failures[d.id] < 3 {
				return false
			}
		}
		return failedSeen
	})
	time.Sleep(700 * time.Millisecond) // any extra retry would arrive in this time
	perID := map[string][]string{}
	for _, d := range rc.seen() {
		perID[d.id] = append(perID[d.id], d.status)
	}
	for id, attempts := range perID {
		if len(attempts) != 3 {
			t.Fatalf("event %s had %d attempts (%v), want 2 failures and 1 success", id, len(attempts), attempts)
		}
	}
	var last map[string]any
	for _, d := range rc.seen() {
		if d.status == "failed" {
			json.Unmarshal(d.body, &last)
		}
	}
	e, _ := last["error"].(map[string]any)
	if e == nil || e["message"] == "" || e["code"] == "" {
		t.Fatalf("failed task callback without its error: %v", last)
	}
}

func TestCallbackGoneStopsDeliveries(t *testing.T) {
	base, _ := startCallbackGateway(t, true)
	rc := newReceiver(t, func(int) int { return 410 })
	id := createWithCallback(t, base, "nobody listens", rc.URL)
	waitFor(t, "the task to finish", func() bool {
		return call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-hooks", nil).json(t)["status"] == "succeeded"
	})
	// The first delivery is sent from the outbox, after the status change it tells of: on a
	// loaded machine it may come after the task shows finished.
	waitFor(t, "the first delivery", func() bool { return len(rc.seen()) > 0 })
	time.Sleep(300 * time.Millisecond) // a second, wrongful delivery would arrive in this time
	if n := len(rc.seen()); n != 1 {
		t.Fatalf("after a 410 the receiver got %d deliveries, want 1", n)
	}
}

func TestCallbacksToPrivateAddressesAreRefused(t *testing.T) {
	base, _ := startCallbackGateway(t, false)
	rc := newReceiver(t, func(int) int { return 200 })
	// Without allow_private, a callback_url whose host is plainly not public is refused at
	// create, in any spelling. (A public name that resolves to a private address passes this
	// check and is refused when dialling: handlers/callbacks TestDialerRefusesPrivateAddressesAtDialTime.)
	port := rc.URL[len("http://127.0.0.1:"):]
	for _, url := range []string{"http://localhost:" + port + "/hook", rc.URL + "/hook", "http://127.1:" + port + "/hook",
		"http://[::ffff:127.0.0.1]:" + port + "/hook", "http://169.254.169.254/latest", "http://hooks.internal/x", "file:///etc/passwd"} {
		r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-hooks",
			fmt.Sprintf(`{"model":"sim-video","content":[{"type":"text","text":"x"}],"callback_url":%q}`, url))
		if m := r.json(t); r.status != 400 || m["code"] != "invalid_request" || m["data"] != nil || !strings.Contains(r.field("message"), "callback_url") {
			t.Errorf("callback_url %s = %d %s, want 400 invalid_request", url, r.status, r.body)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.seen()); n != 0 {
		t.Fatalf("a loopback receiver got %d callbacks without allow_private", n)
	}
	// A callback_url longer than 2048 bytes is refused, naming the param; one of exactly 2048 passes.
	long := "https://hooks.example.com/cb?t="
	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-hooks",
		fmt.Sprintf(`{"model":"sim-video","content":[{"type":"text","text":"x"}],"callback_url":%q}`, long+strings.Repeat("a", 2049-len(long))))
	if m := r.json(t); r.status != 400 || m["code"] != "invalid_request" || !strings.Contains(r.field("message"), "callback_url") || !strings.Contains(r.field("message"), "2048") {
		t.Errorf("a 2049-byte callback_url = %d %s, want 400 invalid_request naming callback_url", r.status, r.body)
	}
	if id := createWithCallback(t, base, "long", long+strings.Repeat("a", 2048-len(long))); id == "" {
		t.Error("a 2048-byte callback_url was refused")
	}
	// A public receiver URL, with its own signature in the query, is accepted.
	id := createWithCallback(t, base, "public", "https://hooks.example.com/cb?Signature=abc")
	if id == "" {
		t.Fatal("no task id")
	}
}

// TestReloadDoesNotWaitForSlowCallbacks reloads while a callback receiver holds a delivery open:
// the old config's outbox must let go at once (the delivery is sent again later, same id).
func TestReloadDoesNotWaitForSlowCallbacks(t *testing.T) {
	base, g := startCallbackGateway(t, true)
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(9 * time.Second):
		}
	}))
	defer slow.Close()
	defer close(release) // runs first: lets the held deliveries go before the server closes
	createWithCallback(t, base, "slow receiver", slow.URL)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery started")
	}
	start := time.Now()
	if err := g.reload(callbacksCaddyfile); err != nil {
		t.Fatal(err)
	}
	// The receiver holds the delivery for 9 s: a reload that waited for it would take that long.
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("reload took %v while a callback was in flight", took)
	}
}

// TestCallbackRetryAfterDateIsHonoured: a receiver that answers 503 with Retry-After as an HTTP
// date (RFC 9110's other form) is not called again before that date, although the retry
// schedule (200ms) is shorter.
func TestCallbackRetryAfterDateIsHonoured(t *testing.T) {
	base, _ := startCallbackGateway(t, true)
	var mu sync.Mutex
	seen := map[string][]time.Time{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		mu.Lock()
		seen[id] = append(seen[id], time.Now())
		first := len(seen[id]) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(rc.Close)
	createWithCallback(t, base, "retry after a date", rc.URL)
	var waited time.Duration
	waitFor(t, "an event delivered on its second attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, at := range seen {
			if len(at) >= 2 {
				waited = at[1].Sub(at[0])
				return true
			}
		}
		return false
	})
	// The date has whole seconds: 3 s from the first answer is at least 2 s after it.
	if waited < 2*time.Second {
		t.Fatalf("the second attempt came %v after the first; Retry-After asked for about 3 s", waited)
	}
}
