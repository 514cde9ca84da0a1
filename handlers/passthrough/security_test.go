package passthrough

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

func wantError(t *testing.T, err error, status int, code string) *apierror.Error {
	t.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != status || (code != "" && e.Code != code) {
		t.Fatalf("err = %v, want %d %s", err, status, code)
	}
	return e
}

func TestOnlyCapabilityEndpointsAreForwarded(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v3/contents/generations/tasks"},
		{"POST", "/v3/contents/generations/tasks"},
		{"DELETE", "/v3/contents/generations/tasks/cgt-1"},
		{"GET", "/api/v3/contents/generations/tasks/cgt-1"},
		{"GET", "/v1/files"},
		{"POST", "/v1/files"},
		{"POST", "/v1/chat/completions/"},
		{"POST", "/v1//chat/completions"},
		{"POST", "/v2/chat/completions"},
		{"POST", "/v1/batches"},
		{"POST", "/v1beta/models/doubao:predict"},
		{"POST", "/v1alpha/models/doubao:countTokens"},
		{"POST", "/v1beta/models/doubao:generateContent/x"},
		{"POST", "/v1/models/doubao:generateContent/x"},
		{"POST", "/v1/models/doubao:predict"},
		{"POST", "/v1/models/doubao"},
		{"GET", "/v1/models/doubao"},
		{"POST", "/V1/chat/completions"},
		// A forwarded path with another method is no endpoint either.
		{"GET", "/v1/videos"},
		{"GET", "/v1/responses"},
		{"GET", "/v1/chat/completions"},
		{"PUT", "/v1/videos/video_1"},
		{"GET", "/v1beta/models/doubao:generateContent"},
		{"GET", "/v1/models/doubao:generateContent"},
		{"GET", "/v1/models/doubao:batchEmbedContents"},
	} {
		r := httptest.NewRequest(tc.method, "/", strings.NewReader(`{"model":"doubao"}`))
		r.URL.Path = tc.path
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		_, err := rt.Route(w, r, auth.Identity{Account: "a"})
		if e := wantError(t, err, 404, "not_found"); e.Message != "no such endpoint" || w.Header().Get("Allow") != "" {
			t.Errorf("%s %s: %v, Allow %q", tc.method, tc.path, e, w.Header().Get("Allow"))
		}
	}
}

// TestEncodedSeparatorsAreNoEndpoint sends paths that decode into a forwarded endpoint's only
// through an encoded '/', '\' or '.': they are no endpoint. Encoded letters are decoded.
func TestEncodedSeparatorsAreNoEndpoint(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/v1/chat%2Fcompletions", 404},
		{"/v1%2fchat/completions", 404},
		{"/v1/chat/completions%2F", 404},
		{"/v1beta/models/doubao%2E1:generateContent", 404},
		{"/v1beta/models/doubao:generateContent%5c", 404},
		{"/v1/chat/%63ompletions", 200},
		{"/v1/chat/completions", 200},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(`{"model":"doubao"}`))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if tc.want == 200 && err != nil {
			t.Errorf("%s: %v", tc.path, err)
		} else if tc.want == 404 {
			if e := wantError(t, err, 404, "not_found"); e.Message != "no such endpoint" {
				t.Errorf("%s: %v", tc.path, e)
			}
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, ok := range [][2]string{{"POST", "/v1/moderations"}, {"POST", "/v1beta/models/{model}:countTokens"}} {
		if _, err := ParseEndpoint(ok[0], ok[1]); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][2]string{{"post", "/v1/x"}, {"*", "/v1/x"}, {"POST", "v1/x"}, {"POST", "/v1/*"}, {"POST", "/v1/../x"},
		{"POST", "/v1//x"}, {"POST", "/v1/x?y"}, {"GET", "/v1/{id}"}, {"", "/v1/x"}} {
		if _, err := ParseEndpoint(bad[0], bad[1]); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestJSONBodiesFollowTheKeyRule(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, body := range []string{
		`{"model":"doubao","Model":"whisper"}`,
		`{"MODEL":"whisper","model":"doubao"}`,
		`{"model":"doubao","model":"whisper"}`,
		`{"model":"doubao","mod\u0065l":"whisper"}`,
		"{\"model\":\"doubao\",\"mod\xffel\":\"whisper\"}",
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		e := wantError(t, err, 400, "invalid_request_body")
		if e.Param == "" || !strings.Contains(e.Message, "refused") {
			t.Errorf("%s: %+v", body, e)
		}
	}
	// A path model and a different body model.
	r := httptest.NewRequest("POST", "/v1beta/models/gemini-pro:generateContent", strings.NewReader(`{"model":"doubao"}`))
	r.Header.Set("Content-Type", "application/json")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	wantError(t, err, 400, "invalid_request_body")
}

func multipartBody(parts ...string) (string, string) {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--x\r\n" + p + "\r\n")
	}
	b.WriteString("--x--\r\n")
	return "multipart/form-data; boundary=x", b.String()
}

func TestMultipartModelParts(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	model := func(disposition, value string) string {
		return "Content-Disposition: " + disposition + "\r\n\r\n" + value
	}
	file := "Content-Disposition: form-data; name=\"file\"; filename=\"model.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF"
	for _, tc := range []struct {
		name  string
		parts []string
		ok    bool
	}{
		{"plain", []string{file, model(`form-data; name="model"`, "whisper")}, true},
		{"unquoted", []string{model(`form-data; name=model`, "whisper"), file}, true}, // forwarded quoted
		{"two model parts", []string{model(`form-data; name="model"`, "whisper"), model(`form-data; name="model"`, "doubao")}, false},
		{"second in capitals", []string{model(`form-data; name="model"`, "whisper"), model(`form-data; name="MODEL"`, "doubao")}, false},
		{"capitalised alone", []string{model(`form-data; name="Model"`, "doubao")}, false},
		{"RFC 2231 name", []string{model(`form-data; name="model"`, "whisper"), model(`form-data; name*=UTF-8''model`, "doubao")}, false},
		{"percent-encoded name", []string{model(`form-data; name="model"`, "whisper"), model(`form-data; name="%6Dodel"`, "doubao")}, false},
		{"padded name", []string{model(`form-data; name="model"`, "whisper"), model(`form-data; name=" model"`, "doubao")}, false},
		{"two names in one part", []string{model(`form-data; name="other"; name="model"`, "doubao")}, false},
		{"two dispositions", []string{"Content-Disposition: form-data; name=\"x\"\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ndoubao", model(`form-data; name="model"`, "whisper")}, false},
		{"malformed disposition", []string{model(`form-data; name="model`, "doubao"), model(`form-data; name="model"`, "whisper")}, false},
		{"quoted-printable model", []string{"Content-Disposition: form-data; name=\"model\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=77hisper"}, false},
		{"value with a line break", []string{model(`form-data; name="model"`, "whisper\r\nx")}, false},
		{"value with spaces", []string{model(`form-data; name="model"`, " whisper")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := multipartBody(tc.parts...)
			r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(body))
			r.Header.Set("Content-Type", ct)
			route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				defer route.Done()
				// Forwarded re-encoded: the gateway's boundary, each name quoted.
				want := strings.ReplaceAll(body, "--x", "--"+forwardedBoundary(t, r))
				want = strings.ReplaceAll(want, "name=model", `name="model"`)
				if got, _ := io.ReadAll(r.Body); string(got) != want || route.Model != "whisper" || r.ContentLength != int64(len(want)) {
					t.Fatalf("model %q, replayed %q, want %q", route.Model, got, want)
				}
				return
			}
			wantError(t, err, 400, "invalid_request_body")
		})
	}
}

// forwardedBoundary is the boundary of the multipart body a routed request forwards, which the
// gateway chose: a long random one, not the client's.
func forwardedBoundary(t *testing.T, r *http.Request) string {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || len(params["boundary"]) < 32 {
		t.Fatalf("forwarded Content-Type %q, want multipart/form-data with the gateway's boundary", r.Header.Get("Content-Type"))
	}
	return params["boundary"]
}

// spoolFiles counts this process's open files that are spool files (unlinked ones included).
func spoolFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir) {
			n++
		}
	}
	return n
}

func TestSpoolIsBoundedAndAlwaysRemoved(t *testing.T) {
	dir := t.TempDir()
	rt := &Router{Catalog: catalog(t), TempDir: dir, SpoolMemory: 1 << 10, MaxSpool: 64 << 10}
	send := func(size int) (Route, error) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("model", "whisper")
		fw, _ := mw.CreateFormFile("file", "a.wav")
		fw.Write(bytes.Repeat([]byte("a"), size))
		mw.Close()
		r := httptest.NewRequest("POST", "/v1/audio/transcriptions", &body)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		r.ContentLength = -1 // sent chunked: bounded while it is spooled
		return rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	}
	route, err := send(32 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || spoolFiles(t, dir) != 1 {
		t.Fatalf("while the request runs: %d directory entries, %d open spool files; want 0 and 1", len(entries), spoolFiles(t, dir))
	}
	route.Done()
	if n := spoolFiles(t, dir); n != 0 {
		t.Fatalf("%d spool files still open after the request", n)
	}
	// Past max_spool: 413, and nothing is left behind.
	_, err = send(100 << 10)
	wantError(t, err, 413, "request_too_large")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || spoolFiles(t, dir) != 0 {
		t.Fatalf("after a 413: %d entries, %d open spool files", len(entries), spoolFiles(t, dir))
	}
	// Declared past max_spool: 413 before a byte is read or spooled.
	r := httptest.NewRequest("POST", "/v1/audio/transcriptions", iotest.ErrReader(errors.New("the body was read")))
	r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	r.ContentLength = 1 << 40
	_, err = rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	wantError(t, err, 413, "request_too_large")
}

func ownersStore(t testing.TB) *storage.Badger {
	t.Helper()
	b, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestOwnedObjects(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	ctx := context.Background()
	now := time.Now().Unix()
	for _, rec := range []storage.Task{
		{ID: "video_mine", Kind: KindVideo, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "video_theirs", Kind: KindVideo, Account: "other", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "resp_mine", Kind: KindResponse, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "resp_theirs", Kind: KindResponse, Account: "other", Provider: "ark", Model: "doubao", CreatedAt: now},
	} {
		if _, err := store.CreateTask(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	route := func(method, path, body string) (Route, *http.Request, error) {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Accept-Encoding", "gzip")
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		rt, err := rt.Route(httptest.NewRecorder(), r, acme)
		return rt, r, err
	}
	for _, ok := range []struct{ method, path, body string }{
		{"GET", "/v1/videos/video_mine", ""}, {"DELETE", "/v1/videos/video_mine", ""}, {"GET", "/v1/videos/video_mine/content", ""},
		{"POST", "/v1/videos/video_mine/remix", `{"prompt":"again"}`}, {"GET", "/v1/responses/resp_mine", ""},
	} {
		got, r, err := route(ok.method, ok.path, ok.body)
		if err != nil {
			t.Fatalf("%s %s: %v", ok.method, ok.path, err)
		}
		if got.Provider.Name != "ark" || got.Model != "doubao" || r.URL.Path != "/api/v3"+strings.TrimPrefix(ok.path, "/v1") {
			t.Fatalf("%s %s routed to %s %s", ok.method, ok.path, got.Provider.Name, r.URL.Path)
		}
		if r.Header.Get("Accept-Encoding") != "" && got.Creates != "" {
			t.Fatalf("%s %s: a create asks for a compressed answer", ok.method, ok.path)
		}
		if got.Billable != (ok.method == "POST") {
			t.Fatalf("%s %s billable = %v", ok.method, ok.path, got.Billable)
		}
	}
	var messages []string
	for _, bad := range []struct{ method, path string }{
		{"GET", "/v1/videos/video_theirs"}, {"GET", "/v1/videos/video_unknown"}, {"DELETE", "/v1/videos/video_theirs"},
		{"GET", "/v1/videos/video_theirs/content"}, {"GET", "/v1/responses/resp_theirs"}, {"GET", "/v1/videos/resp_mine"},
	} {
		_, _, err := route(bad.method, bad.path, "")
		messages = append(messages, wantError(t, err, 404, "not_found").Message)
	}
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Fatalf("answers differ between unknown and foreign ids: %q", messages)
		}
	}
	_, _, err := route("POST", "/v1/videos/video_mine/remix", `{"prompt":"again","Model":"whisper"}`)
	wantError(t, err, 400, "invalid_request_body")
	_, _, err = route("POST", "/v1/videos/video_mine/remix", `{"prompt":"again","model":"whisper"}`)
	wantError(t, err, 400, "invalid_request_body")
	// A remix is a video generation: the URLs and references in its body are checked as a
	// create's are.
	_, _, err = route("POST", "/v1/videos/video_mine/remix", `{"prompt":"again","input_reference":"http://169.254.169.254/"}`)
	if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "input_reference" {
		t.Fatalf("remix with a private URL: param %q", e.Param)
	}
	_, _, err = route("POST", "/v1/videos/video_mine/remix", `{"prompt":"again","image":{"file_id":"file-theirs"}}`)
	wantError(t, err, 400, "invalid_request_body")
	ct, mp := multipartBody("Content-Disposition: form-data; name=\"model\"\r\n\r\nwhisper")
	r := httptest.NewRequest("POST", "/v1/videos/video_mine/remix", strings.NewReader(mp))
	r.Header.Set("Content-Type", ct)
	_, err = rt.Route(httptest.NewRecorder(), r, acme)
	wantError(t, err, 400, "invalid_request_body")

	// A key of the same account that may not use the object's model sees nothing of it: a
	// remix and a read are answered as for an unknown id (auth.Identity.Sees).
	narrow := auth.Identity{Account: "acme", KeyID: "k2", Models: []string{"whisper"}}
	r = httptest.NewRequest("POST", "/v1/videos/video_mine/remix", strings.NewReader(`{"prompt":"again"}`))
	r.Header.Set("Content-Type", "application/json")
	_, err = rt.Route(httptest.NewRecorder(), r, narrow)
	wantError(t, err, 404, "not_found")
	_, err = rt.Route(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/videos/video_mine", nil), narrow)
	wantError(t, err, 404, "not_found")

	// previous_response_id must be the caller's own.
	if _, _, err := route("POST", "/v1/responses", `{"model":"doubao","previous_response_id":"resp_mine"}`); err != nil {
		t.Fatal(err)
	}
	var refusals []string
	for _, ref := range []string{"resp_theirs", "resp_unknown", "video_mine"} {
		_, _, err := route("POST", "/v1/responses", `{"model":"doubao","previous_response_id":"`+ref+`"}`)
		refusals = append(refusals, wantError(t, err, 400, "invalid_request_body").Message)
	}
	if refusals[0] != refusals[1] {
		t.Fatalf("answers differ: %q", refusals)
	}
	_, _, err = route("POST", "/v1/responses", `{"model":"doubao","previous_response_id":"resp_mine","Previous_Response_ID":"resp_theirs"}`)
	wantError(t, err, 400, "invalid_request_body")
}

// proxyTo plays reverse_proxy: it writes the upstream's answer to w.
func proxyTo(w http.ResponseWriter, contentType string, chunks ...string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(200)
	for _, c := range chunks {
		io.WriteString(w, c)
		http.NewResponseController(w).Flush()
	}
}

func TestCreatedObjectsAreRecordedBeforeTheClientSeesThem(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	route := Route{Model: "doubao", Provider: p, Creates: KindVideo}

	// A JSON answer: held, recorded, then sent.
	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("POST", "/v1/videos", nil), acme, route)
	proxyTo(cw, "application/json", `{"id":"video_1",`, `"object":"video"}`)
	if w.Body.Len() != 0 || w.Code != 200 && w.Flushed {
		t.Fatalf("the answer reached the client before Finish: %q", w.Body)
	}
	cw.Finish()
	if w.Code != 200 || w.Body.String() != `{"id":"video_1","object":"video"}` {
		t.Fatalf("answer %d %q", w.Code, w.Body)
	}
	if rec, err := store.Task(context.Background(), "video_1"); err != nil || rec.Account != "acme" || rec.Kind != KindVideo {
		t.Fatalf("record %+v, %v", rec, err)
	}

	// An SSE answer: the first event passes at once, the one with the id after it is recorded.
	route.Creates = KindResponse
	var seenBeforeRecord []string
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, route)
	cw.record = func(id string, answer []byte) error {
		seenBeforeRecord = append(seenBeforeRecord, w.Body.String())
		_, err := rt.recordOwner(context.Background(), acme, route, id, answer, false)
		return err
	}
	proxyTo(cw, "text/event-stream", "event: hello\ndata: {}\n\n", "event: response.created\ndata: {\"type\":\"response.created\",", "\"response\":{\"id\":\"resp_1\"}}\n\n", "data: {\"type\":\"delta\"}\n\n")
	cw.Finish()
	if len(seenBeforeRecord) != 1 || strings.Contains(seenBeforeRecord[0], "resp_1") || !strings.Contains(seenBeforeRecord[0], "hello") {
		t.Fatalf("before the record the client had %q", seenBeforeRecord)
	}
	if !strings.Contains(w.Body.String(), "resp_1") || !strings.HasSuffix(w.Body.String(), "data: {\"type\":\"delta\"}\n\n") {
		t.Fatalf("stream %q", w.Body)
	}
	if rec, err := store.Task(context.Background(), "resp_1"); err != nil || rec.Account != "acme" {
		t.Fatalf("record %+v, %v", rec, err)
	}

	// An id already owned by another account is not taken over, and never handed out.
	route.Creates = KindVideo
	other := auth.Identity{Account: "other", KeyID: "k2"}
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/v1/videos", nil), other, route)
	proxyTo(cw, "application/json", `{"id":"video_1"}`)
	cw.Finish()
	if w.Code != 500 || strings.Contains(w.Body.String(), "video_1") {
		t.Fatalf("answer %d %q", w.Code, w.Body)
	}
	// The 500 is in the shape of the endpoint the client called (here the messages protocol's).
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/anthropic/v1/messages/batches", nil), other, route)
	cw.Shape = apierror.AnthropicShape
	proxyTo(cw, "application/json", `{"id":"video_1"}`)
	cw.Finish()
	if w.Code != 500 || !strings.HasPrefix(w.Body.String(), `{"type":"error","error":{"type":"api_error"`) {
		t.Fatalf("answer %d %q", w.Code, w.Body)
	}
	// Error answers pass untouched.
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/v1/videos", nil), acme, route)
	cw.Header().Set("Content-Type", "application/json")
	cw.WriteHeader(400)
	fmt.Fprint(cw, `{"error":{"message":"bad","id":"x"}}`)
	cw.Finish()
	if w.Code != 400 || !strings.Contains(w.Body.String(), "bad") {
		t.Fatalf("error answer %d %q", w.Code, w.Body)
	}
}

func TestCreatedStreamWrittenByteByByte(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	p, _ := rt.Catalog.ProviderFor("doubao")
	route := Route{Model: "doubao", Provider: p, Creates: KindResponse}
	stream := "event: a\r\ndata: {\"type\":\"x\"}\r\n\r\nevent: b\r\ndata: {\"response\":{\"id\":\"resp_bytes\"}}\r\n\r\ndata: [DONE]\r\n\r\n"
	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), auth.Identity{Account: "acme"}, route)
	cw.Header().Set("Content-Type", "text/event-stream")
	cw.WriteHeader(200)
	for i := range len(stream) {
		if _, err := cw.Write([]byte{stream[i]}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(w.Body.String(), "resp_bytes") {
			if _, err := store.Task(context.Background(), "resp_bytes"); err != nil {
				t.Fatalf("the id reached the client before its record: %v", err)
			}
		}
	}
	cw.Finish()
	if w.Body.String() != stream {
		t.Fatalf("stream changed: %q", w.Body)
	}
}

// FuzzCreatedWriter checks that whatever the upstream sends, in whatever pieces, the client gets
// exactly those bytes (the writer only holds them back), and never panics.
func FuzzCreatedWriter(f *testing.F) {
	f.Add([]byte("event: a\ndata: {\"response\":{\"id\":\"r\"}}\n\ndata: x\n\n"), uint8(3), true)
	f.Add([]byte(`{"id":"video_1","object":"video"}`), uint8(1), false)
	f.Add([]byte("data: {\"id\":1}\r\n\r\n"), uint8(7), true)
	f.Add([]byte(`{"a":1,"a":2,"id":"x"}`), uint8(2), false)
	f.Add([]byte(`{"id":"x","ID":"y"}`), uint8(2), false)
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, sse bool) {
		size := int(chunk%16) + 1
		w := httptest.NewRecorder()
		cw := &CreatedWriter{ResponseWriter: w, record: func(string, []byte) error { return nil }, logger: zap.NewNop(), limit: 1 << 10}
		if sse {
			cw.Header().Set("Content-Type", "text/event-stream")
		} else {
			cw.Header().Set("Content-Type", "application/json")
		}
		cw.WriteHeader(200)
		for i := 0; i < len(body); i += size {
			if _, err := cw.Write(body[i:min(i+size, len(body))]); err != nil {
				t.Fatal(err)
			}
		}
		cw.Finish()
		if !bytes.Equal(w.Body.Bytes(), body) {
			// Only a held JSON answer with an ambiguous id is withheld, as a 500.
			if _, err := answerID(body); sse || err == nil || w.Code != 500 {
				t.Fatalf("sent %q, the client got %d %q", body, w.Code, w.Body.Bytes())
			}
		}
	})
}

// A remix body need not name the model; on a provider that maps the model it goes upstream as
// it came, and the upstream keeps the object's own model.
func TestRemixWithoutModelOnAMappedModel(t *testing.T) {
	store := ownersStore(t)
	u, _ := url.Parse("https://ark.example.com/api/v3")
	c, err := providers.NewCatalog([]*providers.Provider{{Name: "ark", BaseURL: u, APIKey: "ark-key", Models: []string{"doubao"}, ModelMap: map[string]string{"doubao": "doubao-2025"}}})
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: c, Owners: store, Logger: zap.NewNop()}
	if _, err := store.CreateTask(context.Background(), storage.Task{ID: "video_mine", Kind: KindVideo, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/videos/video_mine/remix", strings.NewReader(`{"prompt":"again"}`))
	r.Header.Set("Content-Type", "application/json")
	route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "acme", KeyID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer route.Done()
	if body, _ := io.ReadAll(r.Body); string(body) != `{"prompt":"again"}` {
		t.Fatalf("sent upstream %s", body)
	}
	r = httptest.NewRequest("POST", "/v1/videos/video_mine/remix", strings.NewReader(`{"prompt":"again","model":"doubao"}`))
	r.Header.Set("Content-Type", "application/json")
	if _, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "acme", KeyID: "k"}); err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(r.Body); string(body) != `{"prompt":"again","model":"doubao-2025"}` {
		t.Fatalf("sent upstream %s", body)
	}
}

// TestMethodOverridesAreRefused sends checked requests that ask the upstream to take them for
// another method, as Google's APIs and many web frameworks allow: POST /v1/videos taken for GET
// lists every video of the operator's upstream account.
func TestMethodOverridesAreRefused(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct{ path, header string }{
		{"/v1/chat/completions", "X-HTTP-Method-Override"},
		{"/v1/chat/completions", "x-http-method"},
		{"/v1/chat/completions", "X-Method-Override"},
		{"/v1/chat/completions", "X_HTTP_Method_Override"},
		{"/v1/chat/completions?_method=GET", ""},
		{"/v1/chat/completions?_METHOD=GET", ""},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(`{"model":"doubao"}`))
		r.Header.Set("Content-Type", "application/json")
		if tc.header != "" {
			r.Header[tc.header] = []string{"GET"}
		}
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		wantError(t, err, 400, "invalid_request_body")
	}
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"doubao"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Request-Id", "1")
	r.Header.Set("X-Stainless-Os", "Linux")
	if _, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"}); err != nil {
		t.Fatal(err)
	}
}
