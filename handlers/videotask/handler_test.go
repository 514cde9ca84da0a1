package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

// fakeUpstream answers the task API with the given handler and counts calls.
type fakeUpstream struct {
	*httptest.Server
	calls atomic.Int64
	auth  atomic.Value
}

func newFakeUpstream(t testing.TB, h http.HandlerFunc) *fakeUpstream {
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		f.auth.Store(r.Header.Get("Authorization"))
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// failingStore refuses task writes.
type failingStore struct{ storage.Store }

func (failingStore) CreateTask(context.Context, storage.Task) (storage.Task, error) {
	return storage.Task{}, errors.New("disk full")
}

func newHandler(t testing.TB, upstreamURL string, store storage.Store) *Handler {
	t.Helper()
	u, _ := url.Parse(upstreamURL + "/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: u, APIKey: "upstream-secret", Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	if store == nil {
		store = openBadger(t)
	}
	return &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 5 * time.Second}, Logger: zap.NewNop()}
}

// openBadger opens a Badger store in a temporary directory, closed at the end of the test.
func openBadger(t testing.TB) *storage.Badger {
	t.Helper()
	b, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func serve(h *Handler, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const createPath = "/api/v3/contents/generations/tasks"
const createBody = `{"model":"m","content":[{"type":"text","text":"hi"}]}`

func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	return m
}

func TestCreateUpstreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream http.HandlerFunc
		status   int
		code     string
	}{
		{"upstream 4xx passed on", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":"InvalidParameter.Resolution","message":"resolution 4k is not supported by this model"}}`)
		}, 400, "InvalidParameter.Resolution"},
		{"upstream 429 passed on", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"code":"RateLimitExceeded","message":"slow down"}}`)
		}, 429, "RateLimitExceeded"},
		{"upstream 4xx without a body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }, 400, "upstream_error"},
		// A 403 refuses the operator's credential or account (Ark's AccessDenied, ModelNotOpen):
		// not the client's to act on.
		{"upstream 403 without a body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }, 502, "invalid_response"},
		{"upstream 5xx", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, 502, "invalid_response"},
		{"unreadable 200", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `<html>`) }, 502, "invalid_response"},
		{"200 without id", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) }, 502, "invalid_response"},
		{"200 with an id of 100 KB", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"id":"`+strings.Repeat("a", 100<<10)+`"}`)
		}, 502, "invalid_response"},
		{"200 with an id that is a path", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"id":"cgt-1/../../files"}`) }, 502, "invalid_response"},
		{"200 with a numeric id", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"id":12}`) }, 502, "invalid_response"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, 504, "upstream_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, tc.upstream)
			h := newHandler(t, up.URL, nil)
			if tc.code == "upstream_timeout" {
				h.Client.Timeout = 300 * time.Millisecond // the fake answers after 2 s
			}
			w := serve(h, "POST", createPath, createBody)
			body := decode(t, w)
			if w.Code != tc.status || body["code"] != tc.code || body["message"] == "" {
				t.Fatalf("got %d %s, want %d %s", w.Code, w.Body, tc.status, tc.code)
			}
			if _, ok := body["data"]; !ok {
				t.Fatal("task-shape error without data")
			}
			if got := up.auth.Load(); got != "Bearer upstream-secret" {
				t.Fatalf("upstream saw Authorization %q", got)
			}
		})
	}
	t.Run("upstream unreachable", func(t *testing.T) {
		h := newHandler(t, "http://127.0.0.1:1", nil)
		w := serve(h, "POST", createPath, createBody)
		if w.Code != 502 || decode(t, w)["code"] != "invalid_response" {
			t.Fatalf("got %d %s", w.Code, w.Body)
		}
	})
}

func TestCreateNeverReturnsAnUnrecordedID(t *testing.T) {
	var deleted atomic.Bool
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/cgt-orphan") {
			deleted.Store(true)
		}
		io.WriteString(w, `{"id":"cgt-orphan"}`)
	})
	b, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := newHandler(t, up.URL, failingStore{b})
	w := serve(h, "POST", createPath, createBody)
	if w.Code != 500 || strings.Contains(w.Body.String(), "cgt-orphan") || strings.Contains(w.Body.String(), "disk full") {
		t.Fatalf("got %d %s; want 500 without the id or the cause", w.Code, w.Body)
	}
	deadline := time.Now().Add(30 * time.Second) // a generous wait: it ends as soon as the condition holds
	for !deleted.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !deleted.Load() {
		t.Fatal("the unrecorded upstream task was not cancelled")
	}
}

func TestQueryRefreshIsSharedAndRateLimited(t *testing.T) {
	var status atomic.Value
	status.Store("running")
	release := make(chan struct{})
	var gets atomic.Int64
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"id":"cgt-1"}`)
			return
		}
		if gets.Add(1) == 1 {
			<-release // hold the first read so that concurrent polls pile up behind it
		}
		st := status.Load().(string)
		content := `{}`
		if st == "succeeded" {
			content = `{"video_url":"https://v.example.com/1.mp4"}`
		}
		io.WriteString(w, `{"id":"cgt-1","model":"m","status":"`+st+`","content":`+content+`,"resolution":"720p","usage":{"total_tokens":9},"created_at":100,"updated_at":200}`)
	})
	h := newHandler(t, up.URL, nil)
	h.RefreshInterval = time.Hour
	h.Client.Timeout = 5 * time.Second
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}

	var wg sync.WaitGroup
	results := make([]*httptest.ResponseRecorder, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = serve(h, "GET", createPath+"/cgt-1", "")
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	for _, w := range results {
		body := decode(t, w)
		if w.Code != 200 || body["status"] != "running" || body["error"] != nil {
			t.Fatalf("poll = %d %s", w.Code, w.Body)
		}
		if c, ok := body["content"].(map[string]any); !ok || len(c) != 0 {
			t.Fatalf("content before success = %v", body["content"])
		}
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("8 concurrent polls made %d upstream reads, want 1", n)
	}
	// Within the refresh interval the stored state is served.
	serve(h, "GET", createPath+"/cgt-1", "")
	if n := gets.Load(); n != 1 {
		t.Fatalf("a poll within the refresh interval reached the upstream (%d reads)", n)
	}

	// After the interval the upstream is read again; a terminal result is then served from the
	// store for good.
	h.RefreshInterval = time.Nanosecond
	status.Store("succeeded")
	w := serve(h, "GET", createPath+"/cgt-1", "")
	body := decode(t, w)
	if body["status"] != "succeeded" || body["content"].(map[string]any)["video_url"] == nil || body["resolution"] != "720p" || body["usage"] == nil {
		t.Fatalf("succeeded poll = %s", w.Body)
	}
	if _, ok := body["ratio"]; ok {
		t.Fatal("ratio without data must be omitted")
	}
	status.Store("failed")
	for range 3 {
		serve(h, "GET", createPath+"/cgt-1", "")
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("terminal task read from upstream again: %d reads", n)
	}
}

func TestQueryResultShape(t *testing.T) {
	rec := storage.Task{ID: "cgt-9", Model: "m", CreatedAt: 10, UpdatedAt: 11}
	for _, tc := range []struct {
		name, upstream, wantStatus string
		wantError                  bool
	}{
		{"failed with error", `{"status":"failed","error":{"code":"X","message":"boom"},"content":{"video_url":"u"}}`, "failed", true},
		{"failed without error", `{"status":"failed"}`, "failed", true},
		{"failed via failure_reason", `{"status":"failed","failure_reason":{"message":"m"}}`, "failed", true},
		{"pending maps to queued", `{"status":"pending","error":{"message":"stale"}}`, "queued", false},
		{"processing maps to running", `{"status":"processing"}`, "running", false},
		{"canceled maps to cancelled", `{"status":"canceled"}`, "cancelled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var up map[string]json.RawMessage
			json.Unmarshal([]byte(tc.upstream), &up)
			fields, status := queryResult(up, rec)
			out := fields.asMap()
			if status != tc.wantStatus || string(out["status"]) != `"`+tc.wantStatus+`"` {
				t.Fatalf("status = %s", out["status"])
			}
			if (string(out["error"]) != "null") != tc.wantError {
				t.Fatalf("error = %s", out["error"])
			}
			if string(out["content"]) != "{}" || string(out["id"]) != `"cgt-9"` || string(out["created_at"]) != "10" {
				t.Fatalf("out = %v", out)
			}
		})
	}
}

func TestDraftTaskMustBeTheCallersOwn(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"cgt-new"}`)
	})
	h := newHandler(t, up.URL, nil)
	ctx := context.Background()
	for _, task := range []storage.Task{
		{ID: "cgt-mine", Kind: storage.KindVideo, Account: "acme", Provider: "p", Model: "m", CreatedAt: time.Now().Unix()},
		{ID: "cgt-theirs", Kind: storage.KindVideo, Account: "other", Provider: "p", Model: "m", CreatedAt: time.Now().Unix()},
	} {
		if _, err := h.Store.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	draft := func(id string) string {
		return `{"model":"m","content":[{"type":"text","text":"hi"},{"type":"draft_task","draft_task":{"id":"` + id + `"}}]}`
	}
	var answers []string
	for _, id := range []string{"cgt-theirs", "cgt-unknown"} {
		w := serve(h, "POST", createPath, draft(id))
		m := decode(t, w)
		if w.Code != 400 || m["code"] != "invalid_request" || !strings.Contains(m["message"].(string), "content[1].draft_task.id") {
			t.Fatalf("draft %s: %d %s", id, w.Code, w.Body)
		}
		answers = append(answers, m["message"].(string))
	}
	if answers[0] != answers[1] {
		t.Fatalf("another account's draft is told apart from an unknown one: %q vs %q", answers[0], answers[1])
	}
	if up.calls.Load() != 0 {
		t.Fatal("a refused draft reached the upstream")
	}
	if w := serve(h, "POST", createPath, draft("cgt-mine")); w.Code != 200 {
		t.Fatalf("own draft: %d %s", w.Code, w.Body)
	}
}

func TestListRefusesMoreThan100TaskIDs(t *testing.T) {
	h := newHandler(t, "http://127.0.0.1:1", nil)
	q := "?filter.task_ids=a" + strings.Repeat("&filter.task_ids=a", MaxFilterTaskIDs-1)
	if w := serve(h, "GET", createPath+q, ""); w.Code != 200 {
		t.Fatalf("100 ids: %d %s", w.Code, w.Body)
	}
	w := serve(h, "GET", createPath+q+"&filter.task_ids=b", "")
	if m := decode(t, w); w.Code != 400 || m["code"] != "invalid_request" || !strings.Contains(m["message"].(string), "filter.task_ids") {
		t.Fatalf("101 ids: %d %s", w.Code, w.Body)
	}
}

// A list query the gateway cannot read whole is refused, not read in part: a badly encoded
// parameter (which url.Values drops) or a parameter that takes one value given twice.
func TestListRefusesAmbiguousQueries(t *testing.T) {
	h := newHandler(t, "http://127.0.0.1:1", nil)
	for _, q := range []string{"?page_size=%zz", "?filter.status=queued&x=%", "?page_size=1&page_size=2",
		"?filter.status=queued&filter.status=failed", "?page_num=1&page_num=1", "?filter.model=a&filter.model=b"} {
		w := serve(h, "GET", createPath+q, "")
		if m := decode(t, w); w.Code != 400 || m["code"] != "invalid_request" || m["data"] != nil {
			t.Errorf("%s: %d %s", q, w.Code, w.Body)
		}
	}
	if w := serve(h, "GET", createPath+"?page_size=2&filter.task_ids=a&filter.task_ids=b", ""); w.Code != 200 {
		t.Fatalf("a plain query: %d %s", w.Code, w.Body)
	}
}

// A callback_url that can never be delivered to (a host that is plainly not public) is refused
// at create, unless private receivers are allowed.
func TestCreateRefusesPrivateCallbackURLs(t *testing.T) {
	var n atomic.Int64
	u := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":"cgt-cb%d"}`, n.Add(1))
	})
	h := newHandler(t, u.URL, nil)
	key, _ := callbacks.ParseSecret(callbacks.NewSecret())
	h.Callbacks = &callbacks.Outbox{Store: h.Store, Key: key, Client: callbacks.NewClient(false), Logger: zap.NewNop()}
	withCallback := func(url string) string {
		return strings.Replace(createBody, `"model"`, `"callback_url":"`+url+`","model"`, 1)
	}
	for _, url := range []string{"http://127.0.0.1:9/x", "http://localhost/x", "http://0x7f.1/x", "http://10.1.2.3/x", "http://[fe80::1]/x", "http://hooks/x"} {
		w := serve(h, "POST", createPath, withCallback(url))
		if m := decode(t, w); w.Code != 400 || m["code"] != "invalid_request" || !strings.Contains(m["message"].(string), "callback_url") {
			t.Errorf("callback_url %s: %d %s", url, w.Code, w.Body)
		}
	}
	if w := serve(h, "POST", createPath, withCallback("https://hooks.example.com/x?signature=s")); w.Code != 200 {
		t.Fatalf("public callback_url: %d %s", w.Code, w.Body)
	}
	h.Callbacks.AllowPrivate = true
	if w := serve(h, "POST", createPath, withCallback("http://127.0.0.1:9/x")); w.Code != 200 {
		t.Fatalf("loopback callback_url with private receivers allowed: %d %s", w.Code, w.Body)
	}
}

// TestWriteCreatedIsTheEncodedID checks the answer of a create against encoding/json's encoding
// of the id, for plain ids and for ids with characters that must be escaped.
func TestWriteCreatedIsTheEncodedID(t *testing.T) {
	for _, id := range []string{"cgt-20250101-abc", `a"b`, "a<b>&c", `a\b`, "a\u2028b", "é", ""} {
		w := httptest.NewRecorder()
		writeCreated(w, id)
		want, err := json.Marshal(map[string]string{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(w.Body.String(), "\n"); got != string(want) || w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("id %q: %d %s, want %s", id, w.Code, got, want)
		}
	}
}
