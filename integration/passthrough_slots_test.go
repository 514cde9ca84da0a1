package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// passThroughSlotsCaddyfile is the README's pass-through form with a key that may have one
// unfinished task, and models of the asynchronous kinds that pass-through creates.
const passThroughSlotsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   sora-2 video-gen-1 image-async image-1
		}
		key mg-slots {
			account acme
			max_active_tasks 1
		}
	}
}
` + readmePassThroughSite

// passThroughVideosUpstream, a provider that serves OpenAI-style asynchronous objects to
// pass-through, answers the create, retrieve and delete of OpenAI's Videos API (POST /v1/videos,
// GET and DELETE /v1/videos/{id}: a video object with id, object "video", model and status
// queued, in_progress, completed or failed), POST /v1/video/generations the same way, and
// /v1/images/generations with a task id for the model image-async and with data for any other (a
// synchronous answer). Every call must carry Authorization: Bearer upstream-key (else 401); a
// create whose prompt contains "[refuse]" is refused with a 400. Statuses are set by the test.
type passThroughVideosUpstream struct {
	mu     sync.Mutex
	next   int
	status map[string]string
}

func (f *passThroughVideosUpstream) set(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[id] = status
}

func (f *passThroughVideosUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer upstream-key" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Prompt string `json:"prompt"`
	}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.Contains(req.Prompt, "[refuse]") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad body","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/images/generations" && req.Model != "image-async":
		fmt.Fprint(w, `{"created":1,"data":[{"url":"https://cdn.example.com/a.png"}]}`)
	case r.Method == http.MethodPost:
		f.next++
		id := fmt.Sprintf("video_%d", f.next)
		f.status[id] = "queued"
		fmt.Fprintf(w, `{"id":%q,"object":"video","model":%q,"status":"queued","progress":0,"created_at":1}`, id, req.Model)
	case r.Method == http.MethodGet:
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		fmt.Fprintf(w, `{"id":%q,"object":"video","status":%q}`, id, f.status[id])
	case r.Method == http.MethodDelete:
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		fmt.Fprintf(w, `{"id":%q,"object":"video.deleted","deleted":true}`, id)
	}
}

// TestPassThroughObjectsHoldActiveSlots: the asynchronous objects made through pass-through
// (videos, video generations, image tasks) count against max_active_tasks, as video tasks do.
// A created video holds the key's one slot until a retrieve shows it completed (two concurrent
// retrieves give it back once) or it is deleted; a synchronous image answer and an upstream's
// refusal keep no slot.
func TestPassThroughObjectsHoldActiveSlots(t *testing.T) {
	fake := &passThroughVideosUpstream{status: map[string]string{}}
	provider := httptest.NewServer(fake)
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, passThroughSlotsCaddyfile, map[string]string{"upstream_url": provider.URL})

	create := func(path, model string) response {
		t.Helper()
		return call(t, http.MethodPost, base+path, "mg-slots", fmt.Sprintf(`{"model":%q,"prompt":"a lighthouse"}`, model))
	}
	refused := func(path, model string) {
		t.Helper()
		if r := create(path, model); r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "too_many_active_tasks") {
			t.Fatalf("%s %s at the limit = %d %s, want 429 too_many_active_tasks", path, model, r.status, r.body)
		}
	}

	// An upstream's refusal keeps no slot: the create after it is served.
	if r := call(t, http.MethodPost, base+"/v1/videos", "mg-slots", `{"model":"sora-2","prompt":"[refuse]"}`); r.status != http.StatusBadRequest {
		t.Fatalf("a create the upstream refuses = %d %s, want its 400", r.status, r.body)
	}
	// A synchronous image answer keeps no slot: twice in a row is fine.
	for range 2 {
		if r := create("/v1/images/generations", "image-1"); r.status != http.StatusOK {
			t.Fatalf("synchronous image = %d %s", r.status, r.body)
		}
	}
	first := create("/v1/videos", "sora-2")
	if first.status != http.StatusOK {
		t.Fatalf("create = %d %s", first.status, first.body)
	}
	v1 := first.field("id")
	refused("/v1/videos", "sora-2")
	refused("/v1/video/generations", "video-gen-1")
	refused("/v1/images/generations", "image-async")

	// Still running: the slot stays taken.
	fake.set(v1, "in_progress")
	if r := call(t, http.MethodGet, base+"/v1/videos/"+v1, "mg-slots", nil); r.status != http.StatusOK || r.field("status") != "in_progress" {
		t.Fatalf("retrieve = %d %s", r.status, r.body)
	}
	refused("/v1/videos", "sora-2")

	// Completed, seen by two retrieves at once: the slot is given back once.
	fake.set(v1, "completed")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if r, err := send(http.MethodGet, base+"/v1/videos/"+v1, "mg-slots", nil); err != nil || r.status != http.StatusOK {
				t.Errorf("retrieve = %v %v", r.status, err)
			}
		})
	}
	wg.Wait()
	second := create("/v1/video/generations", "video-gen-1")
	if second.status != http.StatusOK {
		t.Fatalf("create after the video completed = %d %s", second.status, second.body)
	}
	refused("/v1/videos", "sora-2") // one release, not two

	// A delete of the running object gives its slot back; an image task then holds it.
	if r := call(t, http.MethodDelete, base+"/v1/video/generations/"+second.field("id"), "mg-slots", nil); r.status != http.StatusNotFound {
		// /v1/video/generations has no delete call: 404 from the gateway, the slot stays.
		t.Fatalf("delete of a video generation = %d %s", r.status, r.body)
	}
	refused("/v1/videos", "sora-2")
	fake.set(second.field("id"), "FAILED") // a provider's upper-case status is final too
	if r := call(t, http.MethodGet, base+"/v1/video/generations/"+second.field("id"), "mg-slots", nil); r.status != http.StatusOK {
		t.Fatalf("retrieve = %d %s", r.status, r.body)
	}
	third := create("/v1/videos", "sora-2")
	if third.status != http.StatusOK {
		t.Fatalf("create after the generation failed = %d %s", third.status, third.body)
	}
	if r := call(t, http.MethodDelete, base+"/v1/videos/"+third.field("id"), "mg-slots", nil); r.status != http.StatusOK {
		t.Fatalf("delete = %d %s", r.status, r.body)
	}
	task := create("/v1/images/generations", "image-async")
	if task.status != http.StatusOK || task.field("id") == "" {
		t.Fatalf("asynchronous image after the delete = %d %s", task.status, task.body)
	}
	refused("/v1/videos", "sora-2")
	fake.set(task.field("id"), "succeeded")
	if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+task.field("id"), "mg-slots", nil); r.status != http.StatusOK {
		t.Fatalf("image task retrieve = %d %s", r.status, r.body)
	}
	if r := create("/v1/videos", "sora-2"); r.status != http.StatusOK {
		t.Fatalf("create after the image task succeeded = %d %s", r.status, r.body)
	}
}
