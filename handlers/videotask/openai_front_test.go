package videotask

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/storage"
)

// arkRecorder is an Ark upstream that records each create body and answers every task read
// with answer.
type arkRecorder struct {
	mu      sync.Mutex
	creates []map[string]any
	answer  string
}

func (a *arkRecorder) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Method == http.MethodPost {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(400)
			return
		}
		a.creates = append(a.creates, body)
		io.WriteString(w, `{"id":"cgt-`+strings.Repeat("0", 23)+string(rune('0'+len(a.creates)))+`"}`)
		return
	}
	io.WriteString(w, a.answer)
}

func newFront(t *testing.T, answer string) (*VideosFront, *arkRecorder) {
	t.Helper()
	up := &arkRecorder{answer: answer}
	f := newFakeUpstream(t, up.serve)
	return &VideosFront{Tasks: newHandler(t, f.URL, nil)}, up
}

// serveFront sends a request to the front as account, with next answering 299 "next".
func serveFront(f *VideosFront, account, method, target, contentType string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, body)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k-" + account, Account: account}))
	w := httptest.NewRecorder()
	err := f.ServeHTTP(w, r, func(w http.ResponseWriter, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(299)
		w.Write(append([]byte("next:"), b...))
		return nil
	})
	if err != nil {
		w.Code = 599
	}
	return w
}

func videoOf(t *testing.T, w *httptest.ResponseRecorder) Video {
	t.Helper()
	var v Video
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &v) != nil {
		t.Fatalf("answer %d %s, want a video", w.Code, w.Body)
	}
	return v
}

const succeededAnswer = `{"id":"x","model":"up","status":"succeeded","content":{"video_url":"https://cdn.example/v.mp4","last_frame_url":"https://cdn.example/v.png"},` +
	`"created_at":1,"updated_at":9,"duration":4,"resolution":"720p","ratio":"16:9"}`

// TestVideosFrontLifecycle: a JSON create maps onto the task API's body upstream, answers a
// queued video; its retrieve, after the upstream succeeded, is completed with the actual
// seconds and size; its content redirects to the result (the thumbnail to the last frame); and
// another account gets exactly the answer of an unknown id.
func TestVideosFrontLifecycle(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	w := serveFront(f, "acme", "POST", "/v1/videos", "application/json",
		strings.NewReader(`{"model":"m","prompt":"a red fox","seconds":"4","size":"1280x720","input_reference":{"image_url":"https://img.example/fox.png"}}`))
	v := videoOf(t, w)
	if v.Object != "video" || v.Status != "queued" || v.Progress != 0 || v.Model != "m" || v.Prompt == nil || *v.Prompt != "a red fox" ||
		v.Seconds != "4" || v.Size != "1280x720" || v.Error != nil || v.CompletedAt != nil || !strings.HasPrefix(v.ID, "cgt-") {
		t.Fatalf("created video = %+v", v)
	}
	got, _ := json.Marshal(up.creates)
	want := `[{"content":[{"text":"a red fox","type":"text"},{"image_url":{"url":"https://img.example/fox.png"},"role":"first_frame","type":"image_url"}],` +
		`"duration":4,"model":"m","ratio":"16:9","resolution":"720p","return_last_frame":true}]`
	if string(got) != want {
		t.Fatalf("upstream create bodies\n%s\nwant\n%s", got, want)
	}

	v = videoOf(t, serveFront(f, "acme", "GET", "/v1/videos/"+v.ID, "", nil))
	if v.Status != "completed" || v.Progress != 100 || v.CompletedAt == nil || *v.CompletedAt != 9 || v.Seconds != "4" || v.Size != "1280x720" {
		t.Fatalf("retrieved video = %+v", v)
	}
	for variant, location := range map[string]string{"": "https://cdn.example/v.mp4", "?variant=video": "https://cdn.example/v.mp4", "?variant=thumbnail": "https://cdn.example/v.png"} {
		w := serveFront(f, "acme", "GET", "/v1/videos/"+v.ID+"/content"+variant, "", nil)
		if w.Code != http.StatusFound || w.Header().Get("Location") != location {
			t.Fatalf("content%s = %d %v", variant, w.Code, w.Header())
		}
	}

	unknown := serveFront(f, "acme", "GET", "/v1/videos/cgt-unknown", "", nil)
	if unknown.Code != 404 || !strings.Contains(unknown.Body.String(), `"type":"not_found_error"`) {
		t.Fatalf("unknown id = %d %s", unknown.Code, unknown.Body)
	}
	for _, call := range []struct{ method, suffix string }{{"GET", ""}, {"DELETE", ""}, {"GET", "/content"}} {
		other := serveFront(f, "other", call.method, "/v1/videos/"+v.ID+call.suffix, "", nil)
		unknown := serveFront(f, "other", call.method, "/v1/videos/cgt-unknown"+call.suffix, "", nil)
		if other.Code != 404 || other.Body.String() != unknown.Body.String() {
			t.Fatalf("%s %s by another account = %d %s; an unknown id's = %d %s", call.method, call.suffix, other.Code, other.Body, unknown.Code, unknown.Body)
		}
	}

	w = serveFront(f, "acme", "DELETE", "/v1/videos/"+v.ID, "", nil)
	if w.Code != 200 || w.Body.String() != `{"id":"`+v.ID+`","object":"video.deleted","deleted":true}`+"\n" {
		t.Fatalf("delete = %d %s", w.Code, w.Body)
	}
	if w := serveFront(f, "acme", "GET", "/v1/videos/"+v.ID, "", nil); w.Code != 404 {
		t.Fatalf("a deleted video = %d %s", w.Code, w.Body)
	}
}

// TestVideosFrontFailedStates: a failed task is a failed video with the provider's error;
// cancelled and expired ones are failed videos whose error says which.
func TestVideosFrontFailedStates(t *testing.T) {
	for status, code := range map[string]string{"failed": "OutputVideoSensitiveContentDetected", "cancelled": "cancelled", "expired": "expired"} {
		f, _ := newFront(t, `{"id":"x","status":"`+status+`","error":{"code":"OutputVideoSensitiveContentDetected","message":"no"}}`)
		v := videoOf(t, serveFront(f, "acme", "POST", "/v1/videos", "application/json", strings.NewReader(`{"model":"m","prompt":"p"}`)))
		v = videoOf(t, serveFront(f, "acme", "GET", "/v1/videos/"+v.ID, "", nil))
		if v.Status != "failed" || v.Error == nil || v.Error.Code != code || v.Error.Message == "" || v.Seconds != "5" || v.Size != "1280x720" {
			t.Fatalf("%s task = %+v (error %+v)", status, v, v.Error)
		}
		if w := serveFront(f, "acme", "GET", "/v1/videos/"+v.ID+"/content", "", nil); w.Code != http.StatusConflict {
			t.Fatalf("content of a %s video = %d %s", status, w.Code, w.Body)
		}
	}
}

// multipartBody writes a form of text fields, and a file part when file is set.
func multipartBody(t *testing.T, fields [][2]string, file bool) (string, *bytes.Buffer) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if file {
		fw, err := mw.CreateFormFile("input_reference", "fox.png")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(bytes.Repeat([]byte{0x89}, 2<<20)) // more than the body bound: never read
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &b
}

// TestVideosFrontMultipart: the OpenAI SDKs' form of text fields creates a task as JSON does; a
// form with a file is 400 with a message that points to presign, and nothing reaches the
// upstream.
func TestVideosFrontMultipart(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	ct, body := multipartBody(t, [][2]string{{"model", "m"}, {"prompt", "a fox"}, {"seconds", "8"}, {"size", "720x1280"}, {"input_reference[image_url]", "https://img.example/a.png"}}, false)
	v := videoOf(t, serveFront(f, "acme", "POST", "/v1/videos", ct, body))
	if v.Seconds != "8" || v.Size != "720x1280" || len(up.creates) != 1 || up.creates[0]["ratio"] != "9:16" {
		t.Fatalf("video %+v from upstream create %v", v, up.creates)
	}
	ct, body = multipartBody(t, [][2]string{{"model", "m"}, {"prompt", "a fox"}}, true)
	w := serveFront(f, "acme", "POST", "/v1/videos", ct, body)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "/v1/upload/presign") || !strings.Contains(w.Body.String(), `"param":"input_reference"`) || len(up.creates) != 1 {
		t.Fatalf("a form with a file = %d %s; %d upstream creates", w.Code, w.Body, len(up.creates))
	}
	for _, fields := range [][][2]string{{{"model", "m"}, {"model", "m"}, {"prompt", "p"}}, {{"model", "m"}, {"prompt", "p"}, {"input_reference[file_id]", "file-1"}}} {
		ct, body = multipartBody(t, fields, false)
		if w := serveFront(f, "acme", "POST", "/v1/videos", ct, body); w.Code != 400 || !strings.Contains(w.Body.String(), `"error":{`) {
			t.Fatalf("form %v = %d %s", fields, w.Code, w.Body)
		}
	}
	// A form without a boundary is told so, not that it should be a form.
	ct, body = multipartBody(t, [][2]string{{"model", "m"}, {"prompt", "a fox"}}, false)
	w = serveFront(f, "acme", "POST", "/v1/videos", "multipart/form-data", body)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "boundary") || !strings.Contains(w.Body.String(), `"param":"Content-Type"`) || len(up.creates) != 1 {
		t.Fatalf("a form without a boundary (%s) = %d %s", ct, w.Code, w.Body)
	}
}

// TestVideosFrontRefusals: bad requests get 400s in OpenAI's shape that name the client's field,
// and nothing reaches the upstream.
func TestVideosFrontRefusals(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	for body, param := range map[string]string{
		`{"model":"m"}`:                "prompt",
		`{"model":"m","prompt":""}`:    "prompt",
		`{"prompt":"p"}`:               "model",
		`{}`:                           "model",
		`{"prompt":"","seconds":"99"}`: "model",
		`{"model":"m","prompt":"p","seconds":"20"}`:                                 "seconds",
		`{"model":"m","prompt":"p","seconds":"four"}`:                               "seconds",
		`{"model":"m","prompt":"p","size":"wide"}`:                                  "size",
		`{"model":"m","prompt":"p","quality":"high"}`:                               "quality",
		`{"model":"m","prompt":"p","input_reference":"/etc"}`:                       "input_reference",
		`{"model":"m","prompt":"p","input_reference":"data:image/png;base64,AAAA"}`: "input_reference",
		`{"model":"m","prompt":"p","input_reference":{"file_id":"file-1"}}`:         "input_reference",
	} {
		w := serveFront(f, "acme", "POST", "/v1/videos", "application/json", strings.NewReader(body))
		var e struct {
			Error struct{ Type, Param, Message string }
		}
		if w.Code != 400 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Param != param || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, param) && param != "input_reference" {
			t.Errorf("%s = %d %s, want a 400 about %s", body, w.Code, w.Body, param)
		}
	}
	if w := serveFront(f, "acme", "POST", "/v1/videos", "text/plain", strings.NewReader(`{}`)); w.Code != 400 {
		t.Errorf("text/plain = %d %s", w.Code, w.Body)
	}
	if len(up.creates) != 0 {
		t.Fatalf("refused creates reached the upstream: %v", up.creates)
	}
}

// TestVideosFrontList pages through the caller's videos by cursor in both orders; another
// account's videos and image tasks are never listed.
func TestVideosFrontList(t *testing.T) {
	f, _ := newFront(t, succeededAnswer)
	for i, account := range []string{"acme", "acme", "other", "acme"} {
		task := storage.Task{ID: "cgt-" + string(rune('a'+i)), Kind: storage.KindVideo, Account: account, Model: "m", Status: StatusQueued, CreatedAt: int64(100 + i)}
		if _, err := f.Tasks.Store.CreateTask(t.Context(), task); err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) VideoList {
		w := serveFront(f, "acme", "GET", "/v1/videos"+query, "", nil)
		var l VideoList
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &l) != nil || l.Object != "list" {
			t.Fatalf("list%s = %d %s", query, w.Code, w.Body)
		}
		return l
	}
	ids := func(l VideoList) (s string) {
		for _, v := range l.Data {
			s += v.ID + " "
		}
		return s
	}
	l := list("?limit=2")
	if ids(l) != "cgt-d cgt-b " || !l.HasMore || *l.FirstID != "cgt-d" || *l.LastID != "cgt-b" {
		t.Fatalf("first page %s has_more %v", ids(l), l.HasMore)
	}
	if l = list("?limit=2&after=cgt-b"); ids(l) != "cgt-a " || l.HasMore {
		t.Fatalf("second page %s has_more %v", ids(l), l.HasMore)
	}
	if l = list("?order=asc"); ids(l) != "cgt-a cgt-b cgt-d " || l.HasMore {
		t.Fatalf("oldest first %s", ids(l))
	}
	if l = list("?after=cgt-c"); len(l.Data) != 0 || l.FirstID != nil || l.LastID != nil {
		t.Fatalf("after another account's video: %+v", l)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?order=up", "?page=2", "?limit=1&limit=2"} {
		if w := serveFront(f, "acme", "GET", "/v1/videos"+q, "", nil); w.Code != 400 {
			t.Errorf("list%s = %d %s", q, w.Code, w.Body)
		}
	}
}

// TestVideosFrontPassThrough: with the provider named in PassThrough, a create for its model (JSON
// or a form with a file) and a call on a video that pass-through created go to the next handler
// with the body whole; others are the front's.
func TestVideosFrontPassThrough(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	f.PassThrough, f.PassThroughKind = []string{"p"}, "video_job"
	body := `{"model":"m","prompt":"p","input_reference":{"file_id":"file-1"}}`
	if w := serveFront(f, "acme", "POST", "/v1/videos", "application/json", strings.NewReader(body)); w.Code != 299 || w.Body.String() != "next:"+body {
		t.Fatalf("JSON create = %d %s", w.Code, w.Body)
	}
	ct, form := multipartBody(t, [][2]string{{"model", "m"}, {"prompt", "p"}}, true)
	whole := form.String()
	if w := serveFront(f, "acme", "POST", "/v1/videos", ct, form); w.Code != 299 || w.Body.String() != "next:"+whole {
		t.Fatalf("form create = %d (%d bytes), want the %d bytes of the form", w.Code, w.Body.Len(), len(whole)+5)
	}
	job := storage.Task{ID: "video_1", Kind: "video_job", Account: "acme", Model: "m", CreatedAt: 1}
	if _, err := f.Tasks.Store.CreateTask(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if w := serveFront(f, "acme", "GET", "/v1/videos/video_1/content", "", nil); w.Code != 299 {
		t.Fatalf("a pass-through video's content = %d %s", w.Code, w.Body)
	}
	if w := serveFront(f, "other", "GET", "/v1/videos/video_1", "", nil); w.Code != 404 {
		t.Fatalf("another account's pass-through video = %d %s", w.Code, w.Body)
	}
	if len(up.creates) != 0 {
		t.Fatalf("pass-through creates reached the task upstream: %v", up.creates)
	}
}

func TestSizeMapping(t *testing.T) {
	for size, want := range map[string]string{
		"1280x720": "720p 16:9 1280x720", "720x1280": "720p 9:16 720x1280", "1792x1024": "1080p 16:9 1920x1080",
		"1024x1792": "1080p 9:16 1080x1920", "640x480": "480p 4:3 640x480", "3840x2160": "4k 16:9 3840x2160", "1024x1024": "1080p 1:1 1080x1080",
	} {
		res, ratio, err := SizeToArk(size)
		if got := res + " " + ratio + " " + ArkToSize(res, ratio); err != nil || got != want {
			t.Errorf("%s → %s %v, want %s", size, got, err, want)
		}
	}
	for _, bad := range []string{"", "1280", "1280x", "x720", "0x720", "-1x5", "99999x720", "1280X720"} {
		if _, _, err := SizeToArk(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestVideosFrontIdempotency: a create retried with the same Idempotency-Key answers the first
// video again and creates nothing more upstream; the same key with another body is 422.
func TestVideosFrontIdempotency(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	f.Tasks.Idempotency = &idempotency.Guard{Store: f.Tasks.Store, Logger: zap.NewNop()}
	create := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/videos", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "create-1")
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k", Account: "acme"}))
		w := httptest.NewRecorder()
		if err := f.ServeHTTP(w, r, nil); err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := create(`{"model":"m","prompt":"once"}`)
	again := create(`{"model":"m","prompt":"once"}`)
	if videoOf(t, first).ID != videoOf(t, again).ID || len(up.creates) != 1 {
		t.Fatalf("first %s, retry %s; %d upstream creates", first.Body, again.Body, len(up.creates))
	}
	if other := create(`{"model":"m","prompt":"twice"}`); other.Code != 422 || !strings.Contains(other.Body.String(), `"error":{`) || len(up.creates) != 1 {
		t.Fatalf("the key with another body = %d %s; %d upstream creates", other.Code, other.Body, len(up.creates))
	}
}

// pageRecorder records the task lists asked of the store.
type pageRecorder struct {
	storage.Store
	queries []storage.TaskQuery
}

func (p *pageRecorder) ListTasks(ctx context.Context, account string, q storage.TaskQuery) (storage.TaskPage, error) {
	p.queries = append(p.queries, q)
	return p.Store.ListTasks(ctx, account, q)
}

// TestVideosFrontListReadsAPage: a /v1/videos page asks the store for limit+1 tasks from the
// cursor and no total, so that it reads a page however many tasks the account has.
func TestVideosFrontListReadsAPage(t *testing.T) {
	f, _ := newFront(t, succeededAnswer)
	rec := &pageRecorder{Store: f.Tasks.Store}
	f.Tasks.Store = rec
	for _, q := range []string{"", "?limit=7&after=cgt-x", "?order=asc&limit=100"} {
		if w := serveFront(f, "acme", "GET", "/v1/videos"+q, "", nil); w.Code != 200 {
			t.Fatalf("list%s = %d %s", q, w.Code, w.Body)
		}
	}
	want := []int{DefaultVideoListLimit + 1, 8, MaxVideoListLimit + 1}
	if len(rec.queries) != len(want) {
		t.Fatalf("%d lists asked of the store, want %d", len(rec.queries), len(want))
	}
	for i, q := range rec.queries {
		if !q.NoTotal || q.PageNum != 1 || q.PageSize != want[i] {
			t.Errorf("list %d asked the store for %+v; want page 1 of %d without a total", i, q, want[i])
		}
	}
}
