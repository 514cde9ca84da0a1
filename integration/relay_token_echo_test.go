package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// relayEchoCaddyfile sends an Ark provider the gateway's relay address as each task's callback_url.
const relayEchoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url {{ark}}/api/v3
			api_key ark-operator-key
			models ark-video
		}
		key mg-relay-echo {
			account hooks
		}
		callbacks {
			allow_private
			relay_base http://127.0.0.1:{{port}}
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_callback_relay /mediagw/callbacks/*
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestRelayTokenNeverReachesTheClient: the relay address the gateway gives an upstream as a
// task's callback_url carries a token that is a secret between the two (docs/security.md). An
// Ark provider that echoes it in its task answer, as callback_url (a member the Ark SDK's task
// struct does not hold, which the gateway passes on) or inside a member of its own, has it
// kept from the client: not in the query, not in the list. Before, the query showed it.
func TestRelayTokenNeverReachesTheClient(t *testing.T) {
	ark, sent := relayEchoArk(t, "cgt-relay-echo-1", func(w http.ResponseWriter, r *http.Request, relay string) {
		echoed, _ := json.Marshal(relay)
		answerTask(w, r, fmt.Sprintf(`{"id":"cgt-relay-echo-1","model":"ark-video","status":"running","content":{},"created_at":1,"updated_at":2,`+
			`"callback_url":%s,"debug":{"hook":%s}}`, echoed, echoed))
	})
	base, _ := startSimGateway(t, relayEchoCaddyfile, map[string]string{"ark": ark})
	r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-relay-echo",
		`{"model":"ark-video","content":[{"type":"text","text":"a swing"}],"callback_url":"https://hooks.example.com/t"}`)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	relay := sent()
	token := relay[strings.LastIndex(relay, "/")+1:]
	if !strings.Contains(relay, "/mediagw/callbacks/") || len(token) < 16 {
		t.Fatalf("the provider was sent callback_url %q, want the relay address", relay)
	}
	for _, path := range []string{"/" + r.field("id"), "?page_size=10"} {
		got := call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks"+path, "mg-relay-echo", nil)
		if got.status != 200 || strings.Contains(string(got.body), token) {
			t.Errorf("GET %s = %d %s; want the task without the relay token", path, got.status, got.body)
		}
	}
}

// TestRelayTokenNeverInAFailedTasksError: an Ark provider that fails a task with a message
// quoting the relay address it was given, and a code quoting the token alone, has both kept from
// the client: the query, the list and the client's callback each carry the error with the token
// [redacted] and the rest of the text kept. Before, the error passed the token on as written.
func TestRelayTokenNeverInAFailedTasksError(t *testing.T) {
	ark, sent := relayEchoArk(t, "cgt-relay-fail-1", func(w http.ResponseWriter, r *http.Request, relay string) {
		token := relay[strings.LastIndex(relay, "/")+1:]
		errJSON, _ := json.Marshal(map[string]string{"code": "hook:" + token, "message": "cannot POST " + relay + ": 403"})
		answerTask(w, r, fmt.Sprintf(`{"id":"cgt-relay-fail-1","model":"ark-video","status":"failed","content":{},"created_at":1,"updated_at":2,"error":%s}`, errJSON))
	})
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	base, _ := startSimGateway(t, relayEchoCaddyfile, map[string]string{"ark": ark})
	r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-relay-echo",
		fmt.Sprintf(`{"model":"ark-video","content":[{"type":"text","text":"a swing"}],"callback_url":%q}`, rc.URL+"/hooks"))
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	relay := sent()
	token := relay[strings.LastIndex(relay, "/")+1:]
	if len(token) < 16 {
		t.Fatalf("the provider was sent callback_url %q, want the relay address", relay)
	}
	redacted := func(what string, body []byte) {
		t.Helper()
		s := string(body)
		if strings.Contains(s, token) || !strings.Contains(s, `cannot POST `) || !strings.Contains(s, `/mediagw/callbacks/[redacted]: 403`) ||
			!strings.Contains(s, `"hook:[redacted]"`) {
			t.Errorf("%s = %s; want the failed task's error with the relay token [redacted]", what, s)
		}
	}
	for _, path := range []string{"/" + r.field("id"), "?page_size=10"} {
		got := call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks"+path, "mg-relay-echo", nil)
		if got.status != 200 {
			t.Fatalf("GET %s = %d %s", path, got.status, got.body)
		}
		redacted("GET "+path, got.body)
	}
	var hook []byte
	waitFor(t, "the failed callback", func() bool {
		for _, d := range rc.seen() {
			if d.status == "failed" {
				hook = d.body
				return true
			}
		}
		return false
	})
	redacted("the callback", hook)
}

// TestRelayTokenNeverInARefusal: an Ark provider that fails the gateway's read of a task (500)
// and refuses its cancel (400), each with a message quoting the relay address it was given, has
// the token kept from the client: the poll's 502 and the cancel's 400 carry the message with the
// token [redacted]. Before, both passed the provider's message on as written.
func TestRelayTokenNeverInARefusal(t *testing.T) {
	var reads atomic.Int32
	ark, sent := relayEchoArk(t, "cgt-relay-refused-1", func(w http.ResponseWriter, r *http.Request, relay string) {
		status := http.StatusInternalServerError
		switch {
		case r.Method == http.MethodDelete:
			status = http.StatusBadRequest
		case reads.Add(1) > 1: // the cancel's read, after the poll's: the task runs
			answerTask(w, r, `{"id":"cgt-relay-refused-1","model":"ark-video","status":"running","content":{},"created_at":1,"updated_at":2}`)
			return
		}
		message, _ := json.Marshal("callback " + relay + " is unreachable")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":"InvalidParameter","message":%s}}`, message)
	})
	base, _ := startSimGateway(t, relayEchoCaddyfile, map[string]string{"ark": ark})
	tasks := base + "/api/v3/contents/generations/tasks"
	r := call(t, http.MethodPost, tasks, "mg-relay-echo", `{"model":"ark-video","content":[{"type":"text","text":"a swing"}]}`)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	relay := sent()
	token := relay[strings.LastIndex(relay, "/")+1:]
	if len(token) < 16 {
		t.Fatalf("the provider was sent callback_url %q, want the relay address", relay)
	}
	for _, tc := range []struct {
		method string
		status int
	}{{http.MethodGet, http.StatusBadGateway}, {http.MethodDelete, http.StatusBadRequest}} {
		got := call(t, tc.method, tasks+"/"+r.field("id"), "mg-relay-echo", nil)
		if got.status != tc.status || strings.Contains(string(got.body), token) || !strings.Contains(string(got.body), "/mediagw/callbacks/[redacted] is unreachable") {
			t.Errorf("%s = %d %s; want %d with the relay token [redacted]", tc.method, got.status, got.body, tc.status)
		}
	}
}

// relayEchoArk is a fake Ark provider that notes the callback_url of the task it creates (id)
// and answers every other request with read, given that callback_url (the relay address). It
// returns the provider's URL and a func that gives the relay address it was sent.
func relayEchoArk(t *testing.T, id string, read func(w http.ResponseWriter, r *http.Request, relay string)) (url string, relay func() string) {
	var mu sync.Mutex
	sent := ""
	ark := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			var body struct {
				CallbackURL string `json:"callback_url"`
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			mu.Lock()
			sent = body.CallbackURL
			mu.Unlock()
			fmt.Fprintf(w, `{"id":%q}`, id)
			return
		}
		mu.Lock()
		relay := sent
		mu.Unlock()
		read(w, r, relay)
	}))
	return ark.URL, func() string {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// answerTask answers a task read with task, and a task list with a list of it.
func answerTask(w http.ResponseWriter, r *http.Request, task string) {
	if strings.HasSuffix(r.URL.Path, "/tasks") {
		fmt.Fprintf(w, `{"items":[%s],"total":1}`, task)
		return
	}
	io.WriteString(w, task)
}
