package integration

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// imageTaskUpstream is a provider of asynchronous image tasks, in the shape the gateway's
// simulator serves them (handlers/simulator: an image model answered with a task id): POST
// /v1/images/edits and /v1/images/generations answer {"id", "status": "queued", "created"} (a
// prompt containing "[at once]" gets its image at once, with an id beside it: {"id", "created",
// "data"}; one containing "[fails]" gets its task id with the status failed at once), and GET
// /v1/images/tasks/{id} answers {"id", "status", "created"} with, once the test has set the
// task succeeded, OpenAI's image answer members: data (one {"url"} per image made) and, when the
// test names them, the size and quality the images were made at (as gpt-image answers carry
// them); a task set with b64 answers each image as {"b64_json"} of that many bytes instead. Every call must carry Authorization: Bearer upstream-key.
type imageTaskUpstream struct {
	mu    sync.Mutex
	next  int
	tasks map[string]imageTaskState
	reads int
}

// imageTaskState is what a query of one task answers.
type imageTaskState struct {
	status        string
	images        int
	size, quality string
	b64           int
}

func newImageTaskUpstream(t *testing.T) (*imageTaskUpstream, string) {
	f := &imageTaskUpstream{tasks: map[string]imageTaskState{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *imageTaskUpstream) set(id string, s imageTaskState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[id] = s
}

func (f *imageTaskUpstream) queries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *imageTaskUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer upstream-key" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/images/edits" || r.URL.Path == "/v1/images/generations"):
		var req struct {
			Prompt string `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad body","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		f.next++
		if strings.Contains(req.Prompt, "[at once]") {
			fmt.Fprintf(w, `{"id":"img-%d","created":1,"data":[{"url":"https://cdn.example.com/now.png"}]}`, f.next)
			return
		}
		id, status := fmt.Sprintf("imgt-%d", f.next), "queued"
		if strings.Contains(req.Prompt, "[fails]") {
			status = "failed"
		}
		f.tasks[id] = imageTaskState{status: status}
		fmt.Fprintf(w, `{"id":%q,"status":%q,"created":1}`, id, status)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/images/tasks/"):
		f.reads++
		id := strings.TrimPrefix(r.URL.Path, "/v1/images/tasks/")
		s, ok := f.tasks[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"no such task","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		answer := map[string]any{"id": id, "status": s.status, "created": 1}
		if s.status == "succeeded" {
			data := make([]any, s.images)
			for i := range data {
				data[i] = map[string]string{"url": fmt.Sprintf("https://cdn.example.com/%s-%d.png", id, i)}
				if s.b64 > 0 {
					data[i] = map[string]string{"b64_json": strings.Repeat("A", s.b64)}
				}
			}
			answer["data"] = data
			if s.size != "" {
				answer["size"], answer["quality"] = s.size, s.quality
			}
		}
		b, _ := json.Marshal(answer)
		_, _ = w.Write(b)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// imageTaskEndCaddyfile serves image edits and image task queries with mediagw_image_edits, and
// image generations through pass-through, with priced asynchronous image models, and writes the
// usage log to a file.
const imageTaskEndCaddyfile = `{
	{{globals}}
	log usage {
		output file {{usage_log}} {
			roll_disabled
		}
		format json
		include mediagw.usage
	}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   edit-async image-async
		}
		price edit-async {
			image 0.04
			image 1024x1024 low 0.02
			image 1024x1024 high 0.17
		}
		price image-async {
			image 0.05
		}
		key mg-image-tasks {
			account painters
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@image_edits path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @image_edits
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// imageTaskClient makes and queries image tasks on a gateway with one key.
type imageTaskClient struct {
	t         *testing.T
	base, key string
}

// create sends body to path (an edit or an image generation) and returns the task id answered.
func (c imageTaskClient) create(path, body string) string {
	c.t.Helper()
	r := call(c.t, http.MethodPost, c.base+path, c.key, body)
	if r.status != http.StatusOK || r.field("id") == "" {
		c.t.Fatalf("POST %s = %d %s", path, r.status, r.body)
	}
	return r.field("id")
}

// query reads the task id, whose status must be wantStatus.
func (c imageTaskClient) query(id, wantStatus string) {
	c.t.Helper()
	r := call(c.t, http.MethodGet, c.base+"/v1/images/tasks/"+id, c.key, nil)
	if r.status != http.StatusOK || r.field("status") != wantStatus {
		c.t.Fatalf("query of %s = %d %s, want status %s", id, r.status, r.body, wantStatus)
	}
}

// imageEditBody is an edit of model asking for n images of size and quality.
func imageEditBody(model string, n int, size, quality string) string {
	return fmt.Sprintf(`{"model":%q,"prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/cat.png"}],"n":%d,"size":%q,"quality":%q}`,
		model, n, size, quality)
}

// TestImageEditTaskChargedByItsEnd: an edit the provider answers with a task id holds its
// estimate until a query of the task (GET /v1/images/tasks/{id}) shows how it ended: succeeded
// settles it at the images the answer reports (one image of the two held, at the low quality it
// says it made for an edit that asked auto: 0.02, not the 0.34 held), at most the n the edit
// asked for (an answer of 3 images to n 1 is charged 1); failed releases it in full, once when
// four queries see it fail at once. The ledger has one end of each hold, and the usage log a
// task_finished record of each task with its create's endpoint, its status and amount. An image generation passed
// through and answered with a task id is charged by its end the same way. (Before, every such
// edit or generation was charged its estimate at once: the failed task cost 0.04.)
func TestImageEditTaskChargedByItsEnd(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, upURL := newImageTaskUpstream(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, imageTaskEndCaddyfile, map[string]string{"upstream_url": upURL, "usage_log": usageLog})
	keysEnv{g: g}.credit(t, "painters", "1", "img-end-1")
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "painters", want, held) }
	client := imageTaskClient{t: t, base: base, key: "mg-image-tasks"}
	edit := func(body string) string { t.Helper(); return client.create("/v1/images/edits", body) }
	query := client.query

	made := edit(imageEditBody("edit-async", 2, "1024x1024", "auto"))
	balance("0.66", "0.34") // two images at 1024x1024's highest quality: held, not charged
	query(made, "queued")
	balance("0.66", "0.34")
	fake.set(made, imageTaskState{status: "succeeded", images: 1, size: "1024x1024", quality: "low"})
	query(made, "succeeded")
	balance("0.98", "0") // the one low image made
	query(made, "succeeded")
	balance("0.98", "0") // seen again: nothing more

	failed := edit(imageEditBody("edit-async", 1, "2048x2048", "high"))
	balance("0.94", "0.04")
	fake.set(failed, imageTaskState{status: "failed"})
	var seen sync.WaitGroup
	start := make(chan struct{})
	for range 4 { // four clients see it fail at once
		seen.Go(func() {
			<-start
			if r, err := send(http.MethodGet, base+"/v1/images/tasks/"+failed, "mg-image-tasks", nil); err != nil || r.status != http.StatusOK {
				t.Errorf("query = %v, %v", r.status, err)
			}
		})
	}
	close(start)
	seen.Wait()
	balance("0.98", "0") // released in full, once

	more := edit(imageEditBody("edit-async", 1, "2048x2048", "high"))
	fake.set(more, imageTaskState{status: "succeeded", images: 3})
	query(more, "succeeded")
	balance("0.94", "0") // one image (n 1), not three

	// An image generation passed through (mediagw_route) that the provider answers with a task
	// id: its record carries the hold too, and the same query ends it, at the items its answer
	// has (a generation passed through is charged those, even past n: 3 of the 2 held).
	generated := client.create("/v1/images/generations", `{"model":"image-async","prompt":"a lighthouse","n":2}`)
	balance("0.84", "0.1")
	fake.set(generated, imageTaskState{status: "succeeded", images: 3})
	query(generated, "succeeded")
	balance("0.79", "0")

	ends := holdEnds(ledgerEntries(t, g, "painters"))
	var got []string
	for _, e := range ends {
		if len(e) != 1 {
			t.Fatalf("a hold ended %d times: %v", len(e), e)
		}
		got = append(got, fmt.Sprintf("%s %v %v", e[0]["kind"], e[0]["charged"], e[0]["note"]))
	}
	slices.Sort(got)
	if want := []string{"release <nil> task failed", "settle 0.02 <nil>", "settle 0.04 <nil>", "settle 0.15 charged 0.05 over the hold of 0.1"}; !slices.Equal(got, want) {
		t.Fatalf("hold ends %v; want %v", got, want)
	}

	finished := map[string]string{}
	for deadline := time.Now().Add(30 * time.Second); len(finished) < 4 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		finished = map[string]string{}
		for _, rec := range readUsageLog(t, usageLog, "painters") {
			if rec.Event == "task_finished" {
				if _, twice := finished[rec.TaskID]; twice {
					t.Fatalf("task %s finished twice in the usage log", rec.TaskID)
				}
				finished[rec.TaskID] = rec.Endpoint + " " + rec.Status + " " + cmp.Or(rec.Amount, "nothing")
			}
		}
	}
	wantFinished := map[string]string{made: "/v1/images/edits succeeded 0.02", failed: "/v1/images/edits failed nothing",
		more: "/v1/images/edits succeeded 0.04", generated: "/v1/images/generations succeeded 0.15"}
	if fmt.Sprint(finished) != fmt.Sprint(wantFinished) {
		t.Fatalf("task_finished records %v; want %v", finished, wantFinished)
	}
}

// imageTaskInstanceCaddyfile is one of two gateways on one redis-server serving image edits and
// image task queries with mediagw_image_edits, edit-async priced per image.
const imageTaskInstanceCaddyfile = `{
	admin 127.0.0.1:%[1]d
	persist_config off
	mediagw {
		storage redis %[2]s {
			key_prefix imgtask
		}
		provider openai {
			base_url %[3]s/v1
			api_key upstream-key
			models edit-async
		}
		price edit-async {
			image 0.04
		}
	}
}

http://127.0.0.1:%[4]d {
	route {
		mediagw_auth
		@image_edits path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @image_edits
	}
}
`

// TestImageTaskEndedOnceAcrossInstances: two gateways on one redis-server; each image task an
// edit made is queried by four clients at once, two on each gateway (the two on one gateway may
// share its call), when the provider first answers its end: a failed task's hold is released once (one release in the ledger, no
// settlement), a succeeded one's settled once, at the images it made (2 of the 3 held: 0.08), and
// each slot given back once (the key's one slot is free for the next edit, and its count is 0
// at the end).
func TestImageTaskEndedOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	fake, upURL := newImageTaskUpstream(t)
	gws, bases, keyID, secret := redisPair(t, func(adminPort, port int, redisURL string) string {
		return fmt.Sprintf(imageTaskInstanceCaddyfile, adminPort, redisURL, upURL, port)
	}, "painters", "10")

	const tasks = 4
	for i := range tasks {
		r := call(t, "POST", bases[i%2]+"/v1/images/edits", secret, imageEditBody("edit-async", 3, "2048x2048", "high"))
		id := r.field("id")
		if r.status != 200 || id == "" {
			t.Fatalf("edit %d = %d %s", i, r.status, r.body)
		}
		if r := call(t, "GET", bases[(i+1)%2]+"/v1/images/tasks/"+id, secret, nil); r.status != 200 || r.field("status") != "queued" {
			t.Fatalf("query = %d %s", r.status, r.body)
		}
		end := imageTaskState{status: "failed"}
		if i == tasks-1 {
			end = imageTaskState{status: "succeeded", images: 2}
		}
		fake.set(id, end)
		readAtOnce(t, bases, "/v1/images/tasks/"+id, secret, end.status)
	}
	// Each task: the first query, then at least one call per gateway for the four at once
	// (concurrent queries of a task on one gateway share one call), so the two gateways race.
	if n := fake.queries(); n < tasks*3 || n > tasks*5 {
		t.Fatalf("the provider saw %d queries, want %d to %d", n, tasks*3, tasks*5)
	}
	awaitBalance(t, gws[1], "painters", "9.92", "0") // only the succeeded task charged: 2 images
	endedOnceEach(t, gws, "painters", keyID, tasks-1, 1)
}

// passImageTaskCaddyfile is the README's pass-through form alone: image generations and the
// queries of their tasks both go through mediagw_route.
const passImageTaskCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   image-async
		}
		price image-async {
			image 0.05
			image 1024x1024 low 0.01
		}
		key mg-pass-images {
			account painters
		}
	}
}
` + readmePassThroughSite

// TestPassThroughImageTaskChargedByItsEnd: on a site where pass-through serves the image task
// query too (GET /v1/images/tasks/{id} through mediagw_route), an image generation answered with
// a task id is held until a query shows its end: failed releases it, succeeded settles it at the
// images and quality the answer reports (auto held at 0.05, charged the low image: 0.01), a
// query that shows it still running keeps it held. An answer with images is charged with its
// request, though it has an id too.
func TestPassThroughImageTaskChargedByItsEnd(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, upURL := newImageTaskUpstream(t)
	base, g := startSimGateway(t, passImageTaskCaddyfile, map[string]string{"upstream_url": upURL})
	keysEnv{g: g}.credit(t, "painters", "1", "img-pass-1")
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "painters", want, held) }
	client := imageTaskClient{t: t, base: base, key: "mg-pass-images"}
	generate := func() string {
		t.Helper()
		return client.create("/v1/images/generations", `{"model":"image-async","prompt":"a lighthouse","size":"1024x1024","quality":"auto"}`)
	}
	query := client.query

	failed := generate()
	balance("0.95", "0.05")
	query(failed, "queued")
	balance("0.95", "0.05")
	fake.set(failed, imageTaskState{status: "failed"})
	query(failed, "failed")
	balance("1", "0")

	made := generate()
	fake.set(made, imageTaskState{status: "succeeded", images: 1, size: "1024x1024", quality: "low"})
	query(made, "succeeded")
	balance("0.99", "0")
	query(made, "succeeded")
	balance("0.99", "0")

	// Images in the answer, though it has an id too: charged with the request, not held.
	if r := call(t, http.MethodPost, base+"/v1/images/generations", "mg-pass-images", `{"model":"image-async","prompt":"a bridge [at once]"}`); r.status != http.StatusOK {
		t.Fatalf("image generation = %d %s", r.status, r.body)
	}
	balance("0.94", "0")
}
