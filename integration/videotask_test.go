package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

const videoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models seedance-sim
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
		key mg-alice-images {
			account alice
			models gpt-image-*
		}
		key mg-alice-second {
			account alice
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 1s
		running_for 1s
		api_key sim-upstream-key
	}
}
`

// startVideoGateway runs a gateway in front of the simulator and returns its address.
func startVideoGateway(t *testing.T) string {
	base, _ := startSimGateway(t, videoCaddyfile, nil)
	return base
}

func arkClient(base, key string) *arkruntime.Client {
	return arkruntime.NewClientWithApiKey(key, arkruntime.WithBaseUrl(base+"/api/v3"), arkruntime.WithRetryTimes(0))
}

func textTask(prompt string) model.CreateContentGenerationTaskRequest {
	return model.CreateContentGenerationTaskRequest{
		Model: "seedance-sim",
		Content: []*model.CreateContentGenerationContentItem{
			{Type: model.ContentGenerationContentItemTypeText, Text: &prompt},
		},
	}
}

// pollUntil polls a task with the SDK until it reaches a terminal status (bounded).
func pollUntil(t *testing.T, c *arkruntime.Client, id string) model.GetContentGenerationTaskResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got, err := c.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		switch got.Status {
		case model.StatusSucceeded, model.StatusFailed, model.StatusCancelled, "expired":
			return got
		case model.StatusQueued, model.StatusRunning:
		default:
			t.Fatalf("unexpected status %q", got.Status)
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("task %s did not finish in time", id)
	return model.GetContentGenerationTaskResponse{}
}

// httpStatus extracts the HTTP status from an Ark SDK error.
func httpStatus(err error) int {
	var reqErr *model.RequestError
	var apiErr *model.APIError
	switch {
	case errors.As(err, &reqErr):
		return reqErr.HTTPStatusCode
	case errors.As(err, &apiErr):
		return apiErr.HTTPStatusCode
	}
	return 0
}

func TestVideoTaskLifecycleWithArkSDK(t *testing.T) {
	base := startVideoGateway(t)
	alice := arkClient(base, "mg-alice")
	ctx := context.Background()

	req := textTask("a lighthouse at dawn")
	lastFrame := true
	req.ReturnLastFrame = &lastFrame
	created, err := alice.CreateContentGenerationTask(ctx, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(created.ID, "cgt-") {
		t.Fatalf("id = %q", created.ID)
	}
	first, err := alice.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: created.ID})
	if err != nil || first.Status != model.StatusQueued || first.Content.VideoURL != "" || first.Error != nil {
		t.Fatalf("first poll = %+v, %v; want queued with empty content", first, err)
	}
	done := pollUntil(t, alice, created.ID)
	if done.Status != model.StatusSucceeded || !strings.Contains(done.Content.VideoURL, created.ID) ||
		done.Content.LastFrameURL == "" || done.Model != "seedance-sim" || done.CreatedAt == 0 || done.UpdatedAt < done.CreatedAt {
		t.Fatalf("finished task = %+v", done)
	}

	failed, err := alice.CreateContentGenerationTask(ctx, textTask("please [[fail]] this one"))
	if err != nil {
		t.Fatal(err)
	}
	end := pollUntil(t, alice, failed.ID)
	if end.Status != model.StatusFailed || end.Error == nil || end.Error.Message == "" || end.Error.Code == "" || end.Content.VideoURL != "" {
		t.Fatalf("failed task = %+v (error %+v)", end, end.Error)
	}

	page, size := 1, 10
	list, err := alice.ListContentGenerationTasks(ctx, model.ListContentGenerationTasksRequest{PageNum: &page, PageSize: &size})
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 2 || len(list.Items) != 2 || list.Items[0].ID != failed.ID || list.Items[1].ID != created.ID {
		t.Fatalf("list = %+v", list)
	}
	if list.Items[0].FailureReason == nil || list.Items[0].FailureReason.Message == "" {
		t.Fatalf("failed item has no failure_reason: %+v", list.Items[0])
	}
	status := model.StatusSucceeded
	list, err = alice.ListContentGenerationTasks(ctx, model.ListContentGenerationTasksRequest{Filter: &model.ListContentGenerationTasksFilter{Status: &status}})
	if err != nil || list.Total != 1 || list.Items[0].ID != created.ID {
		t.Fatalf("filtered list = %+v, %v", list, err)
	}

	// Deleting a finished task removes it, here as upstream.
	if err := alice.DeleteContentGenerationTask(ctx, model.DeleteContentGenerationTaskRequest{ID: created.ID}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = alice.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: created.ID})
	if httpStatus(err) != 400 {
		t.Fatalf("get after delete: %v, want 400 task_not_exist", err)
	}
}

func TestVideoTaskCancel(t *testing.T) {
	base := startVideoGateway(t)
	alice := arkClient(base, "mg-alice")
	ctx := context.Background()

	queued, err := alice.CreateContentGenerationTask(ctx, textTask("cancel me while queued"))
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.DeleteContentGenerationTask(ctx, model.DeleteContentGenerationTaskRequest{ID: queued.ID}); err != nil {
		t.Fatalf("cancel queued: %v", err)
	}
	got, err := alice.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: queued.ID})
	if err != nil || got.Status != model.StatusCancelled {
		t.Fatalf("after cancel: %+v, %v", got, err)
	}

	running, err := alice.CreateContentGenerationTask(ctx, textTask("too late to cancel"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1300 * time.Millisecond) // queued for 1s, then running for 1s
	err = alice.DeleteContentGenerationTask(ctx, model.DeleteContentGenerationTaskRequest{ID: running.ID})
	if s := httpStatus(err); s < 400 || s >= 500 {
		t.Fatalf("cancelling a running task: %v (status %d), want a 4xx", err, s)
	}
	r := call(t, "DELETE", base+"/api/v3/contents/generations/tasks/"+running.ID, "mg-alice", nil)
	if body := r.json(t); r.status != 409 || body["code"] == "" || body["message"] == "" {
		t.Fatalf("raw cancel of running task = %d %s", r.status, r.body)
	}
}

// TestVideoTaskIsolation checks every path with another account's task id.
func TestVideoTaskIsolation(t *testing.T) {
	base := startVideoGateway(t)
	alice, bob := arkClient(base, "mg-alice"), arkClient(base, "mg-bob")
	ctx := context.Background()
	task, err := alice.CreateContentGenerationTask(ctx, textTask("alice's secret video"))
	if err != nil {
		t.Fatal(err)
	}

	for _, method := range []string{"GET", "DELETE"} {
		for _, id := range []string{task.ID, "cgt-does-not-exist"} {
			r := call(t, method, base+"/api/v3/contents/generations/tasks/"+id, "mg-bob", nil)
			body := r.json(t)
			if r.status != 400 || body["code"] != "task_not_exist" || body["data"] != nil {
				t.Fatalf("bob %s %s = %d %s, want 400 task_not_exist", method, id, r.status, r.body)
			}
		}
	}
	if _, err := bob.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: task.ID}); httpStatus(err) != 400 {
		t.Fatalf("bob read alice's task through the SDK: %v", err)
	}
	list, err := bob.ListContentGenerationTasks(ctx, model.ListContentGenerationTasksRequest{
		Filter: &model.ListContentGenerationTasksFilter{TaskIDs: []*string{&task.ID}},
	})
	if err != nil || list.Total != 0 || len(list.Items) != 0 {
		t.Fatalf("bob's list shows %+v, %v", list, err)
	}
	// Alice still has her task, untouched by bob's delete; a second key of her account sees it,
	// unless the key may not use the task's model (then the task is unknown to it).
	got, err := alice.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: task.ID})
	if err != nil || got.ID != task.ID {
		t.Fatalf("alice lost her task: %v", err)
	}
	r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+task.ID, "mg-alice-second", nil)
	if r.status != 200 {
		t.Fatalf("same account, other key: %d %s", r.status, r.body)
	}
	r = call(t, "GET", base+"/api/v3/contents/generations/tasks/"+task.ID, "mg-alice-images", nil)
	if r.status != 400 || r.json(t)["code"] != "task_not_exist" {
		t.Fatalf("same account, a key of other models: %d %s, want 400 task_not_exist", r.status, r.body)
	}
	ids := []string{}
	for _, it := range arkList(t, base, "mg-alice") {
		ids = append(ids, it)
	}
	if !slices.Contains(ids, task.ID) {
		t.Fatalf("alice's list lacks her task: %v", ids)
	}
}

func arkList(t *testing.T, base, key string) []string {
	t.Helper()
	list, err := arkClient(base, key).ListContentGenerationTasks(context.Background(), model.ListContentGenerationTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range list.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestVideoTaskCreateErrors(t *testing.T) {
	base := startVideoGateway(t)
	url := base + "/api/v3/contents/generations/tasks"
	text := `"content":[{"type":"text","text":"x"}]`
	for _, tc := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"malformed JSON", "mg-alice", `{"model":`, 400, "invalid_request"},
		{"missing model", "mg-alice", `{` + text + `}`, 400, "missing_model"},
		{"unknown content type", "mg-alice", `{"model":"seedance-sim","content":[{"type":"text","text":"x"},{"type":"pdf"}]}`, 400, "unsupported_content_type"},
		{"model outside allow-list", "mg-alice-images", `{"model":"seedance-sim",` + text + `}`, 403, "model_not_allowed"},
		{"model nobody serves", "mg-alice", `{"model":"unknown-model",` + text + `}`, 404, "model_not_found"},
		{"oversized body", "mg-alice", `{"model":"seedance-sim",` + text + `,"pad":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "request_too_large"},
		{"private URL in an unknown field", "mg-alice", `{"model":"seedance-sim","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","fallback":"http://10.0.0.1/a.png"}}]}`, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", url, tc.key, tc.body)
			body := r.json(t)
			if r.status != tc.status || body["code"] != tc.code || body["message"] == "" {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	r := call(t, "PUT", url, "mg-alice", "{}")
	if r.status != 405 || r.json(t)["code"] != "method_not_allowed" {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	if got := arkList(t, base, "mg-alice"); len(got) != 0 {
		t.Fatalf("refused creates left tasks behind: %v", got)
	}
	// Integers written 5.0 or 4.2e1 are the integers they denote, and the upstream gets them
	// plainly: the simulator, which decodes into integers as a Go provider would, refuses "5.0".
	r = call(t, "POST", url, "mg-alice", `{"model":"seedance-sim",`+text+`,"duration":5.0,"seed":4.2e1}`)
	if r.status != 200 || r.json(t)["id"] == nil {
		t.Fatalf("integral floats = %d %s", r.status, r.body)
	}
}
