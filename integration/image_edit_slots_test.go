package integration

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// imageEditSlotsCaddyfile serves image edits and image task queries with mediagw_image_edits, as
// Caddyfile.example does, and everything else through pass-through, for a key that may have one
// unfinished task.
const imageEditSlotsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   edit-async image-async sora-2
		}
		key mg-edit-slots {
			account acme
			max_active_tasks 1
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

// TestImageEditTasksHoldActiveSlots: an image edit answered with a task id holds one of the key's
// max_active_tasks slots, as a pass-through image task or video does, until a query of the task
// (GET /v1/images/tasks/{id}, served by mediagw_image_edits) shows it final; the same query gives
// back the slot of an image task made by a pass-through image generation.
func TestImageEditTasksHoldActiveSlots(t *testing.T) {
	// The pass-through slots test's provider answers an edit (a POST but a synchronous image
	// generation's) with a queued object, and a query with the status the test sets.
	fake := &passThroughVideosUpstream{status: map[string]string{}}
	provider := httptest.NewServer(fake)
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, imageEditSlotsCaddyfile, map[string]string{"upstream_url": provider.URL})
	edit := func() response {
		t.Helper()
		return call(t, http.MethodPost, base+"/v1/images/edits", "mg-edit-slots",
			`{"model":"edit-async","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`)
	}
	refused := func(what string, r response) {
		t.Helper()
		if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "too_many_active_tasks") {
			t.Fatalf("%s at the limit = %d %s, want 429 too_many_active_tasks", what, r.status, r.body)
		}
	}
	query := func(id string) {
		t.Helper()
		if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+id, "mg-edit-slots", nil); r.status != http.StatusOK {
			t.Fatalf("image task query = %d %s", r.status, r.body)
		}
	}

	first := edit()
	if first.status != http.StatusOK || first.field("id") == "" {
		t.Fatalf("asynchronous edit = %d %s", first.status, first.body)
	}
	refused("a second edit", edit())
	refused("a video", call(t, http.MethodPost, base+"/v1/videos", "mg-edit-slots", `{"model":"sora-2","prompt":"a lighthouse"}`))

	fake.set(first.field("id"), "running")
	query(first.field("id"))
	refused("an edit while the first runs", edit())

	fake.set(first.field("id"), "succeeded")
	query(first.field("id"))
	query(first.field("id")) // seen final twice: given back once
	generated := call(t, http.MethodPost, base+"/v1/images/generations", "mg-edit-slots", `{"model":"image-async","prompt":"a lighthouse"}`)
	if generated.status != http.StatusOK || generated.field("id") == "" {
		t.Fatalf("image generation after the edit succeeded = %d %s", generated.status, generated.body)
	}
	refused("an edit beside the generation", edit())

	fake.set(generated.field("id"), "FAILED")
	query(generated.field("id"))
	if r := edit(); r.status != http.StatusOK {
		t.Fatalf("edit after the generation failed = %d %s", r.status, r.body)
	}
}
