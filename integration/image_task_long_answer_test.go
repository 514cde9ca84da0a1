package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// longTaskUpstream is a provider of asynchronous image tasks (the shape of imageTaskUpstream)
// whose task answers the test sets byte for byte, served from one shared buffer however many
// queries read it: POST /v1/images/edits answers {"id","status":"queued","created"}, GET
// /v1/images/tasks/{id} the bytes set for the task, with their Content-Length unless chunked is
// set. Every call must carry Authorization: Bearer upstream-key.
type longTaskUpstream struct {
	mu      sync.Mutex
	next    int
	answers map[string][]byte
	chunked bool
	stall   time.Duration // how long an answer stops halfway
}

// stallFor makes the answers stop for d halfway.
func (f *longTaskUpstream) stallFor(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stall = d
}

func (f *longTaskUpstream) set(id string, answer []byte, chunked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[id], f.chunked = answer, chunked
}

func (f *longTaskUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer upstream-key" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	f.mu.Lock()
	if r.Method == http.MethodPost && r.URL.Path == "/v1/images/edits" {
		f.next++
		id := fmt.Sprintf("imgt-long-%d", f.next)
		f.answers[id] = fmt.Appendf(nil, `{"id":%q,"status":"queued","created":1}`, id)
		f.mu.Unlock()
		fmt.Fprintf(w, `{"id":%q,"status":"queued","created":1}`, id)
		return
	}
	answer, ok := f.answers[strings.TrimPrefix(r.URL.Path, "/v1/images/tasks/")]
	chunked, stall := f.chunked, f.stall
	f.mu.Unlock()
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"no such task","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	if !chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	}
	half := len(answer) / 2
	for len(answer) > 0 { // in pieces, as a network gives them
		if len(answer) == half && stall > 0 {
			w.(http.Flusher).Flush()
			time.Sleep(stall)
		}
		n := min(len(answer), 256<<10, max(len(answer)-half, 1))
		if _, err := w.Write(answer[:n]); err != nil {
			return
		}
		answer = answer[n:]
	}
}

// startLongTaskGateway starts caddyfile (imageTaskEndCaddyfile's form) on a longTaskUpstream,
// credits the account painters with 1, and makes an image task by an edit of n images of
// edit-async at 1024x1024, quality auto.
func startLongTaskGateway(t *testing.T, caddyfile string, n int) (fake *longTaskUpstream, base string, g *gateway, id string) {
	t.Helper()
	fake = &longTaskUpstream{answers: map[string][]byte{}}
	provider := httptest.NewServer(fake)
	t.Cleanup(provider.Close)
	base, g = startSimGateway(t, caddyfile, map[string]string{"upstream_url": provider.URL,
		"usage_log": filepath.Join(t.TempDir(), "usage.log")})
	keysEnv{g: g}.credit(t, "painters", "1", "img-long-"+t.Name())
	images := imageTaskClient{t: t, base: base, key: "mg-image-tasks"}
	return fake, base, g, images.create("/v1/images/edits", imageEditBody("edit-async", n, "1024x1024", "auto"))
}

// succeededAnswer is a succeeded task's answer with images b64_json images of size bytes each,
// and after them, at the top level, the size and quality they were made at and extra members.
func succeededAnswer(id string, images, size int, extra string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":%q,"status":"succeeded","created":1,"data":[`, id)
	for i := range images {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"b64_json":"`)
		for range size / 4 {
			b.WriteString("iVBO")
		}
		b.WriteString(`"}`)
	}
	fmt.Fprintf(&b, `],"size":"1024x1024","quality":"low"%s}`, extra)
	return b.Bytes()
}

// heapAllocated is the bytes the process has allocated on its heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// readAnswer reads a query's answer to its end without holding it: its status, length, SHA-256
// and the error that ended it, if any.
func readLongAnswer(base, id string) (status int, n int64, sum [32]byte, header http.Header, err error) {
	req, err := http.NewRequest(http.MethodGet, base+"/v1/images/tasks/"+id, nil)
	if err != nil {
		return 0, 0, sum, nil, err
	}
	req.Header.Set("Authorization", "Bearer mg-image-tasks")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, sum, nil, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err = io.Copy(h, resp.Body)
	copy(sum[:], h.Sum(nil))
	return resp.StatusCode, n, sum, resp.Header, err
}

// TestLongImageTaskAnswersPassAsTheyCome: sixteen clients query at once a succeeded image task
// whose answer carries its two images as b64_json, 40 MB in all. Each gets the provider's answer
// byte for byte (application/json), the task's hold is settled once at the two low images the
// answer reports (0.04 of the 0.34 held), and the gateway does not hold the answer: all the
// queries together allocate less than one answer's worth (about 7 MB), with the answer's
// Content-Length or without. Before, each query read the answer whole and held two to four
// copies of it while it parsed, settled and answered it: sixteen queries allocated more than
// eighty answers' worth (3.5 GB).
func TestLongImageTaskAnswersPassAsTheyCome(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy, whose heap is the
	// test's.
	fake, base, g, id := startLongTaskGateway(t, imageTaskEndCaddyfile, 2)
	awaitBalance(t, g, "painters", "0.66", "0.34")
	answer := succeededAnswer(id, 2, 20<<20, "")
	want := sha256.Sum256(answer)
	// With the answer's Content-Length, then without (chunked), which the task's end, already
	// settled, does not change.
	for _, chunked := range []bool{false, true} {
		fake.set(id, answer, chunked)
		const queries = 16
		runtime.GC()
		before := heapAllocated()
		var wg sync.WaitGroup
		for range queries {
			wg.Go(func() {
				status, n, sum, header, err := readLongAnswer(base, id)
				if err != nil || status != http.StatusOK || n != int64(len(answer)) || sum != want ||
					header.Get("Content-Type") != "application/json" || header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("query (chunked %v) = %d, %d bytes (%v), %s; want 200 application/json with the provider's %d bytes",
						chunked, status, n, err, header.Get("Content-Type"), len(answer))
				}
			})
		}
		wg.Wait()
		allocated := heapAllocated() - before
		t.Logf("%d queries of a %d-byte answer (chunked %v) allocated %d bytes", queries, len(answer), chunked, allocated)
		if allocated > uint64(len(answer)) {
			t.Errorf("%d queries of a %d-byte answer (chunked %v) allocated %d bytes on the heap, want less than one answer: the answer is held",
				queries, len(answer), chunked, allocated)
		}
	}
	awaitBalance(t, g, "painters", "0.96", "0") // two low 1024x1024 images at 0.02
	for hold, ends := range holdEnds(ledgerEntries(t, g, "painters")) {
		if len(ends) != 1 {
			t.Fatalf("hold %s ended %d times: %v", hold, len(ends), ends)
		}
	}
}

// TestLongImageTaskAnswersCutOff: a long answer that is not one whole valid JSON object (its end
// broken, or a byte in its middle: cut off there), or that quotes the upstream's API key, reaches
// the client cut off (fewer bytes than its Content-Length, none of the key, and not its end) and
// ends nothing: the task stays held.
// A chunked long answer (no Content-Length) is passed on whole too. A client that leaves
// in the middle of a long answer does not stop the task's end from being settled.
func TestLongImageTaskAnswersCutOff(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, id := startLongTaskGateway(t, imageTaskEndCaddyfile, 1)
	awaitBalance(t, g, "painters", "0.83", "0.17")
	good := succeededAnswer(id, 1, 4<<20, "")
	early := bytes.Clone(good)
	early[100_000] = '"' // ends the image's string: what follows is no JSON
	for name, answer := range map[string][]byte{
		"malformed early": early,
		"malformed":       append(bytes.Clone(good[:len(good)-1]), ",}"...),
		"unfinished":      good[:len(good)-1],
		"key quoted":      succeededAnswer(id, 1, 4<<20, `,"debug":"sent with Bearer upstream-key"`),
	} {
		fake.set(id, answer, false)
		status, n, sum, _, err := readLongAnswer(base, id)
		if status != http.StatusOK || err == nil || n >= int64(len(answer)) || sum == sha256.Sum256(answer) {
			t.Fatalf("%s answer: query = %d, %d of %d bytes (%v); want it cut off", name, status, n, len(answer), err)
		}
		if name == "malformed early" && n > 200_000 {
			t.Fatalf("an answer malformed at byte 100000 went on to byte %d", n)
		}
		time.Sleep(100 * time.Millisecond)
		awaitBalance(t, g, "painters", "0.83", "0.17") // ended nothing
	}

	// The same key quoted, seen whole: the answer goes no further than the bytes before it.
	fake.set(id, succeededAnswer(id, 1, 4<<20, `,"debug":"sent with Bearer upstream-key"`), true)
	if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+id, "mg-image-tasks", nil); bytes.Contains(r.body, []byte("upstream-key")) {
		t.Fatalf("a long answer quoting the upstream's key reached the client with it")
	}

	// A client that reads 1 MB of the answer and leaves: the task's end is settled all the same.
	fake.set(id, good, true)
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/images/tasks/"+id, nil)
	req.Header.Set("Authorization", "Bearer mg-image-tasks")
	leaving := &http.Client{Transport: &http.Transport{}}
	resp, err := leaving.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()                           // before its end: the connection is closed
	awaitBalance(t, g, "painters", "0.98", "0") // one low image at 0.02

	status, n, sum, _, err := readLongAnswer(base, id)
	if err != nil || status != http.StatusOK || n != int64(len(good)) || sum != sha256.Sum256(good) {
		t.Fatalf("chunked answer: query = %d, %d of %d bytes (%v); want it whole", status, n, len(good), err)
	}
}

// TestLongImageTaskAnswerShowsTheClientModel: a long answer (a 4 MB b64_json image) of a task
// whose model the provider knows by another id (model_map) is rewritten as a short one is: four
// clients querying it at once each get it whole, with the client's model id and never the
// upstream's (it is held whole for that, by at most two queries at a time).
func TestLongImageTaskAnswerShowsTheClientModel(t *testing.T) {
	image := strings.Repeat("iVBO", 1<<20)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/images/edits":
			fmt.Fprint(w, `{"id":"imgt_alias_long","model":"upstream-image-2025","status":"queued","created":1}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/images/tasks/imgt_alias_long":
			fmt.Fprintf(w, `{"id":"imgt_alias_long","model":"upstream-image-2025","status":"succeeded","created":1,"data":[{"b64_json":%q}]}`, image)
		default:
			http.NotFound(w, r)
		}
	}))
	base := startAliasGateway(t, upstream, "imgt_alias_long")
	want := fmt.Sprintf(`{"id":"imgt_alias_long","model":"gpt-image-async","status":"succeeded","created":1,"data":[{"b64_json":%q}]}`, image)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := send(http.MethodGet, base+"/v1/images/tasks/imgt_alias_long", "mg-image-alias", nil)
			if err != nil || got.status != 200 || string(got.body) != want {
				t.Errorf("query = %d of %d bytes (%v), model %q; want the answer whole with the client's model id",
					got.status, len(got.body), err, got.field("model"))
			}
		})
	}
	wg.Wait()
}

// TestLongImageTaskAnswerAtTheClientsPace: with upstream_timeout 1s, a client that takes 3 s to
// read a 40 MB answer gets it whole, and the task is settled: the timeout bounds each read of the
// provider's answer, not the client's reading. A provider that stops for 2 s halfway has its
// answer cut off there, and the query ends nothing.
func TestLongImageTaskAnswerAtTheClientsPace(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	timed := strings.Replace(imageTaskEndCaddyfile, "mediagw_image_edits @image_edits",
		"mediagw_image_edits @image_edits {\n\t\t\tupstream_timeout 1s\n\t\t}", 1)
	fake, base, g, id := startLongTaskGateway(t, timed, 2)
	answer := succeededAnswer(id, 2, 20<<20, "")

	fake.set(id, answer, false)
	fake.stallFor(2 * time.Second)
	status, n, _, _, err := readLongAnswer(base, id)
	if status != http.StatusOK || err == nil || n >= int64(len(answer)) {
		t.Fatalf("answer stopped halfway: query = %d, %d of %d bytes (%v); want it cut off", status, n, len(answer), err)
	}
	awaitBalance(t, g, "painters", "0.66", "0.34") // ended nothing

	fake.stallFor(0)
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/images/tasks/"+id, nil)
	req.Header.Set("Authorization", "Bearer mg-image-tasks")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	for {
		_, err := io.CopyN(h, resp.Body, 1<<20)
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("slow client: %v", err)
		}
		time.Sleep(75 * time.Millisecond) // 40 MB in 3 s
	}
	if sum := sha256.Sum256(answer); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Fatal("a slow client did not get the answer byte for byte")
	}
	awaitBalance(t, g, "painters", "0.96", "0")
}
