package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/caddymodule"
)

// heldTask is how heldAnswerProvider answers the query of one image task.
type heldTask struct {
	answer []byte
	status int           // 0 is 200
	before chan struct{} // when set, nothing is written until it is closed
	gate   chan struct{} // when set, the answer stops at its half until it is closed
	half   chan struct{} // closed when the half was written (with gate or cut)
	cut    bool          // the answer ends at its half, short of its Content-Length
}

// heldAnswerProvider is a provider of asynchronous image tasks (OpenAI's edit shape answered with
// a task id, as imageTaskUpstream) whose task answers the test sets per task, with their
// Content-Length, and can hold back, stop halfway or cut off. It counts the queries of each task.
// Every call must carry Authorization: Bearer upstream-key.
type heldAnswerProvider struct {
	mu      sync.Mutex
	next    int
	tasks   map[string]*heldTask
	queries map[string]int
	edits   int
	// editWith, when set, is how the next edits are answered, in place of a new task's id.
	editWith *heldTask
}

func (f *heldAnswerProvider) set(id string, task *heldTask) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[id] = task
}

func (f *heldAnswerProvider) answerEditsWith(task *heldTask) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.editWith = task
}

func (f *heldAnswerProvider) edited() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.edits
}

func (f *heldAnswerProvider) queried(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[id]
}

func (f *heldAnswerProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer upstream-key" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	f.mu.Lock()
	if r.Method == http.MethodPost && r.URL.Path == "/v1/images/edits" {
		f.edits++
		if task := f.editWith; task != nil {
			f.mu.Unlock()
			task.write(w, r)
			return
		}
		f.next++
		id := fmt.Sprintf("imgt-mem-%d", f.next)
		f.tasks[id] = &heldTask{answer: fmt.Appendf(nil, `{"id":%q,"status":"running","created":1}`, id)}
		f.mu.Unlock()
		fmt.Fprintf(w, `{"id":%q,"model":"upstream-edit-2025","status":"queued","created":1}`, id)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/v1/images/tasks/")
	task, ok := f.tasks[id]
	f.queries[id]++
	f.mu.Unlock()
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"no such task","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	task.write(w, r)
}

// write answers r as the task says.
func (task *heldTask) write(w http.ResponseWriter, r *http.Request) {
	if task.before != nil {
		select {
		case <-task.before:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(task.answer)))
	w.WriteHeader(orStatus(task.status, http.StatusOK))
	half := len(task.answer) / 2
	if _, err := w.Write(task.answer[:half]); err != nil {
		return
	}
	if task.gate != nil || task.cut {
		w.(http.Flusher).Flush()
		close(task.half)
		if task.cut {
			panic(http.ErrAbortHandler) // the connection closes short of Content-Length
		}
		select {
		case <-task.gate:
		case <-r.Context().Done():
			return
		}
	}
	_, _ = w.Write(task.answer[half:])
}

func orStatus(v, otherwise int) int {
	if v == 0 {
		return otherwise
	}
	return v
}

// answerMemoryCaddyfile is imageTaskEndCaddyfile with edit-async served under the upstream id
// upstream-edit-2025 (model_map), the global option answer_memory {{answer_memory}} and the
// handler's max_answer {{max_answer}}, and a second account, sketchers (key mg-image-sketchers).
var answerMemoryCaddyfile = strings.NewReplacer(
	"models   edit-async image-async", "models   edit-async image-async\n\t\t\tmodel_map edit-async upstream-edit-2025",
	"key mg-image-tasks {", "answer_memory {{answer_memory}}\n\t\tkey mg-image-sketchers {\n\t\t\taccount sketchers\n\t\t}\n\t\tkey mg-image-tasks {",
	"mediagw_image_edits @image_edits", "mediagw_image_edits @image_edits {\n\t\t\tmax_answer {{max_answer}}\n\t\t}",
).Replace(imageTaskEndCaddyfile)

// oneShare is the answer_memory option of size whose one share (answer_memory_per_account) is
// all of it: the bound of a gateway as one account sees it.
func oneShare(size string) string { return size + "\n\t\tanswer_memory_per_account " + size }

// startAnswerMemoryGateway starts answerMemoryCaddyfile on a heldAnswerProvider, credits the
// accounts painters and sketchers with 5 each, and makes tasks image tasks by edits of 2 images of model (edit-async,
// aliased, or image-async, not).
func startAnswerMemoryGateway(t *testing.T, answerMemory, maxAnswer, model string, tasks int) (fake *heldAnswerProvider, base string, g *gateway, ids []string) {
	t.Helper()
	fake = &heldAnswerProvider{tasks: map[string]*heldTask{}, queries: map[string]int{}}
	provider := httptest.NewServer(fake)
	t.Cleanup(provider.Close)
	base, g = startSimGateway(t, answerMemoryCaddyfile, map[string]string{"upstream_url": provider.URL,
		"usage_log": filepath.Join(t.TempDir(), "usage.log"), "answer_memory": answerMemory, "max_answer": maxAnswer})
	keysEnv{g: g}.credit(t, "painters", "5", "img-mem-"+t.Name())
	keysEnv{g: g}.credit(t, "sketchers", "5", "img-mem-sketchers-"+t.Name())
	images := imageTaskClient{t: t, base: base, key: "mg-image-tasks"}
	for range tasks {
		ids = append(ids, images.create("/v1/images/edits", imageEditBody(model, 2, "1024x1024", "auto")))
	}
	return fake, base, g, ids
}

// queryDigest queries the image task id and reads its answer to the end without holding it: its
// status, length and SHA-256. ctx may end it early.
func queryDigest(ctx context.Context, base, id string) (status int, n int64, sum [32]byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/images/tasks/"+id, nil)
	if err != nil {
		return 0, 0, sum, err
	}
	req.Header.Set("Authorization", "Bearer mg-image-tasks")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, sum, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err = io.Copy(h, resp.Body)
	copy(sum[:], h.Sum(nil))
	return resp.StatusCode, n, sum, err
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
		b.Write(bytes.Repeat([]byte("iVBO"), size/4))
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

// heldAnswers is the bytes the gateway's answer budget holds (one budget, which every config
// shares: the running config's is it).
func heldAnswers(t *testing.T) int64 {
	t.Helper()
	return activeApp(t).AnswerBudget().Held()
}

// activeApp is the running config's mediagw app.
func activeApp(t *testing.T) *caddymodule.App {
	t.Helper()
	app, err := caddy.ActiveContext().App("mediagw")
	if err != nil {
		t.Fatal(err)
	}
	return app.(*caddymodule.App)
}

// awaitHeldAnswers waits until the gateway's answer budget holds at least least and at most most
// bytes, and returns what it holds.
func awaitHeldAnswers(t *testing.T, least, most int64) int64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		held := heldAnswers(t)
		if held >= least && held <= most {
			return held
		}
		if time.Now().After(deadline) {
			t.Fatalf("answers held: %d bytes, want %d to %d", held, least, most)
		}
	}
}

// TestParallelImageTaskQueriesShareOneAnswer: sixteen clients query at once an image task that
// succeeded with two b64_json images, 40 MB in all, whose answer quotes the gateway's upstream
// key and names the model by its upstream id (model_map). The provider is called once, and each
// client gets the same bytes as a lone query made after: the key redacted, the model shown as the
// client's edit-async. The sixteen allocate no more than three lone queries do (before, each
// query made its own call and its own copies: 16 calls, 16 times the memory). The task's hold is
// settled at the two low images the answer reports (0.04 of the 0.34 held), and once all are
// answered no answer bytes are held.
func TestParallelImageTaskQueriesShareOneAnswer(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, "256MiB", "64MiB", "edit-async", 1)
	id := ids[0]
	answer := succeededAnswer(id, 2, 20<<20, `,"model":"upstream-edit-2025","note":"billed to upstream-key"`)
	fake.set(id, &heldTask{answer: answer})

	// A lone query: the answer each of the concurrent ones must get, and what one query allocates.
	allocated := heapAllocated()
	lone := call(t, http.MethodGet, base+"/v1/images/tasks/"+id, "mg-image-tasks", nil)
	alone := heapAllocated() - allocated
	if lone.status != http.StatusOK {
		t.Fatalf("a lone query = %d %.300s", lone.status, lone.body)
	}
	var shown struct {
		Model string `json:"model"`
		Note  string `json:"note"`
		Data  []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	if err := json.Unmarshal(lone.body, &shown); err != nil || shown.Model != "edit-async" || len(shown.Data) != 2 ||
		len(shown.Data[0].B64JSON) != 20<<20 || bytes.Contains(lone.body, []byte("upstream-key")) || bytes.Contains(lone.body, []byte("upstream-edit-2025")) {
		t.Fatalf("the answer shows model %q, note %q, %d images (%v); it must show edit-async, no upstream key or model id", shown.Model, shown.Note, len(shown.Data), err)
	}
	loneSum := sha256.Sum256(lone.body)
	lone = response{}
	awaitBalance(t, g, "painters", "4.96", "0")
	awaitHeldAnswers(t, 0, 0)

	before := make(chan struct{})
	fake.set(id, &heldTask{answer: answer, before: before})
	queriedBefore := fake.queried(id)
	const clients = 16
	type result struct {
		status int
		n      int64
		sum    [32]byte
		err    error
	}
	results := make(chan result, clients)
	allocated = heapAllocated()
	for range clients {
		go func() {
			status, n, sum, err := queryDigest(t.Context(), base, id)
			results <- result{status, n, sum, err}
		}()
	}
	time.Sleep(2500 * time.Millisecond) // every query reaches the gateway while the provider holds its answer back
	close(before)
	for i := range clients {
		r := <-results
		if r.err != nil || r.status != http.StatusOK || r.sum != loneSum {
			t.Fatalf("query %d = %d (%v), %d bytes: not the lone query's answer", i, r.status, r.err, r.n)
		}
	}
	grown := heapAllocated() - allocated
	calls := fake.queried(id) - queriedBefore
	t.Logf("a lone query of a %d-byte answer allocated %d MB; 16 at once: %d provider calls, %d MB", len(answer), alone>>20, calls, grown>>20)
	if calls != 1 {
		t.Fatalf("the provider was queried %d times for 16 concurrent queries, want once", calls)
	}
	if grown > 3*alone {
		t.Fatalf("16 concurrent queries allocated %d bytes, a lone one %d: want at most 3 times as much", grown, alone)
	}
	awaitHeldAnswers(t, 0, 0)
}

// TestImageAnswersPastAnswerMemoryAreRefused: with answer_memory 8224 KiB (8 MiB and 32 KiB),
// while half of an answer of 8 MiB and 16 KiB is read (into a buffer of 8 MiB and 128 bytes), a
// query whose answer (7 MB) would not fit beside it is refused at once with 503 gateway_busy and
// Retry-After, and so is an edit, whose reservation (imageedit.EditAnswerReserve, 64 KiB) does
// not fit either: before it is charged or sent. The first answer still reaches its client byte
// for byte; the refused query and edit, made again, are served. A client that leaves halfway, a
// provider error and an answer cut off short of its Content-Length each give back what they
// held: afterwards no answer bytes are held. (Before, there was no bound: every answer was held.)
func TestImageAnswersPastAnswerMemoryAreRefused(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("8224KiB"), "8224KiB", "image-async", 4)
	first, second, failing, cut := ids[0], ids[1], ids[2], ids[3]
	firstAnswer := succeededAnswer(first, 1, 8<<20+16<<10, "")
	gate := make(chan struct{})
	fake.set(first, &heldTask{answer: firstAnswer, gate: gate, half: make(chan struct{})})
	fake.set(second, &heldTask{answer: succeededAnswer(second, 1, 7<<20, "")})
	awaitBalance(t, g, "painters", "4.6", "0.4") // four edits of two images at 0.05 held

	type result struct {
		status int
		sum    [32]byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, _, sum, err := queryDigest(t.Context(), base, first)
		done <- result{status, sum, err}
	}()
	awaitHeldAnswers(t, 8<<20, 8<<20+1<<10) // the first answer's half, read into 8 MiB and 128 bytes

	edits := fake.edited()
	edit := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 2, "1024x1024", "auto"))
	if code, _ := errorCodeAndShape(edit); edit.status != http.StatusServiceUnavailable || code != "gateway_busy" || edit.header.Get("Retry-After") != "1" || fake.edited() != edits {
		t.Fatalf("an edit past answer_memory = %d %.300s (Retry-After %q), provider called %d times; want 503 gateway_busy with Retry-After 1, not sent",
			edit.status, edit.body, edit.header.Get("Retry-After"), fake.edited()-edits)
	}
	awaitBalance(t, g, "painters", "4.6", "0.4") // the refused edit held nothing

	busy := call(t, http.MethodGet, base+"/v1/images/tasks/"+second, "mg-image-tasks", nil)
	if code, shape := errorCodeAndShape(busy); busy.status != http.StatusServiceUnavailable || code != "gateway_busy" || shape != "openai" ||
		busy.header.Get("Retry-After") != "1" {
		t.Fatalf("a query past answer_memory = %d %.300s (Retry-After %q), want 503 gateway_busy in the OpenAI shape with Retry-After 1",
			busy.status, busy.body, busy.header.Get("Retry-After"))
	}
	close(gate)
	if r := <-done; r.err != nil || r.status != http.StatusOK || r.sum != sha256.Sum256(firstAnswer) {
		t.Fatalf("the first query = %d (%v), or other bytes than the provider's", r.status, r.err)
	}
	awaitHeldAnswers(t, 0, 0)
	if again := call(t, http.MethodGet, base+"/v1/images/tasks/"+second, "mg-image-tasks", nil); again.status != http.StatusOK {
		t.Fatalf("the refused query, made again = %d %.200s", again.status, again.body)
	}
	if again := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 2, "1024x1024", "auto")); again.status != http.StatusOK {
		t.Fatalf("the refused edit, made again = %d %.200s", again.status, again.body)
	}
	awaitHeldAnswers(t, 0, 0)

	// A client that leaves while its answer is being read: the provider call ends with it.
	half := make(chan struct{})
	fake.set(first, &heldTask{answer: firstAnswer, gate: make(chan struct{}), half: half})
	ctx, leave := context.WithCancel(t.Context())
	go func() {
		status, _, _, err := queryDigest(ctx, base, first)
		done <- result{status: status, err: err}
	}()
	<-half
	awaitHeldAnswers(t, 8<<20, 9<<20)
	leave()
	if r := <-done; r.err == nil {
		t.Fatalf("a query whose client left got %d", r.status)
	}
	awaitHeldAnswers(t, 0, 0)

	// A provider error, and an answer cut off short of its length: 502, nothing held after.
	fake.set(failing, &heldTask{status: http.StatusInternalServerError,
		answer: append([]byte(`{"error":{"message":"`+strings.Repeat("x", 3<<20)), `","type":"server_error","param":null,"code":null}}`...)})
	fake.set(cut, &heldTask{answer: succeededAnswer(cut, 1, 7<<20, ""), cut: true, half: make(chan struct{})})
	for _, id := range []string{failing, cut} {
		if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+id, "mg-image-tasks", nil); r.status != http.StatusBadGateway {
			t.Fatalf("query of %s = %d %.200s, want 502", id, r.status, r.body)
		}
		awaitHeldAnswers(t, 0, 0)
	}
}

// TestMaxAnswerMustFitAnswerMemory: a config whose mediagw_image_edits reads answers longer than
// the gateway's answer_memory could never hold one: it is refused when it loads, with both names
// in the message; at the bound it loads.
func TestMaxAnswerMustFitAnswerMemory(t *testing.T) {
	g := &gateway{t: t, vars: map[string]string{"globals": "admin off", "data": t.TempDir(), "port": "1",
		"upstream_url": "http://127.0.0.1:1", "usage_log": filepath.Join(t.TempDir(), "usage.log")}}
	for _, c := range []struct {
		answerMemory, maxAnswer string
		refused                 bool
	}{{"32MiB", "64MiB", true}, {oneShare("64MiB"), "64MiB", false}} {
		err := answerMemoryLoadError(g, c.answerMemory, c.maxAnswer)
		if c.refused != (err != nil) || (c.refused && !(strings.Contains(err.Error(), "max_answer") && strings.Contains(err.Error(), "answer_memory"))) {
			t.Errorf("answer_memory %s, max_answer %s: %v", c.answerMemory, c.maxAnswer, err)
		}
	}
}

// answerMemoryLoadError adapts answerMemoryCaddyfile with answer_memory and max_answer and
// reports what loading it (provisioning, without starting it) refuses.
func answerMemoryLoadError(g *gateway, answerMemory, maxAnswer string) error {
	g.t.Helper()
	g.vars["answer_memory"], g.vars["max_answer"] = answerMemory, maxAnswer
	raw, err := g.adapt(answerMemoryCaddyfile)
	if err != nil {
		g.t.Fatal(err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		g.t.Fatal(err)
	}
	return caddy.Validate(&cfg)
}

// TestEditAnswerPastTheRoomLeftIsCharged: an edit's provider answers with an 11 MB image, and
// while the first half of it is read (into 8 MiB of answer_memory, 12 MiB, all of it the
// account's share), a query of the same account takes 2 MiB for another answer and keeps it. The
// rest of the edit's answer then finds no room in the account's share; it waits for room
// (imageedit.EditRoomWait) and finds none: the provider made the image and the account's own
// answers took the room, so the edit is charged its estimate (0.10) and answered 502
// invalid_response, as an answer past max_answer is; the query is answered whole, and afterwards
// nothing is held. (TestEditLostForWantOfMemoryIsChargedOnlyToItsOwnAccount has another
// account's answers take the room.)
func TestEditAnswerPastTheRoomLeftIsCharged(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("12MiB"), "12MiB", "image-async", 1)
	awaitBalance(t, g, "painters", "4.9", "0.1")
	editGate, editHalf := make(chan struct{}), make(chan struct{})
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (11<<20)/4) + `"}]}`),
		gate: editGate, half: editHalf})
	edited := make(chan response, 1)
	go func() {
		r, err := send(http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 2, "1024x1024", "auto"))
		if err != nil {
			r.status = -1
		}
		edited <- r
	}()
	<-editHalf
	awaitHeldAnswers(t, 8<<20, 8<<20+1<<10) // the half read, into 8 MiB and 128 bytes

	queryGate, queryHalf := make(chan struct{}), make(chan struct{})
	answer := succeededAnswer(ids[0], 1, 4<<20-1<<10, "") // half of it fits 2 MiB
	fake.set(ids[0], &heldTask{answer: answer, gate: queryGate, half: queryHalf})
	type result struct {
		status int
		sum    [32]byte
		err    error
	}
	queried := make(chan result, 1)
	go func() {
		status, _, sum, err := queryDigest(t.Context(), base, ids[0])
		queried <- result{status, sum, err}
	}()
	<-queryHalf
	awaitHeldAnswers(t, 10<<20, 10<<20+1<<10)

	close(editGate)
	r := <-edited
	if code, _ := errorCodeAndShape(r); r.status != http.StatusBadGateway || code != "invalid_response" || !strings.Contains(string(r.body), "answer_memory") {
		t.Fatalf("an edit answered past the room left = %d %.300s, want 502 invalid_response naming answer_memory", r.status, r.body)
	}
	awaitBalance(t, g, "painters", "4.8", "0.1") // charged its estimate: two images at 0.05
	close(queryGate)
	if q := <-queried; q.err != nil || q.status != http.StatusOK || q.sum != sha256.Sum256(answer) {
		t.Fatalf("the query = %d (%v), or other bytes than the provider's", q.status, q.err)
	}
	awaitHeldAnswers(t, 0, 0)
}
