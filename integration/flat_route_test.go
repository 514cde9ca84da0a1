package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// matchedRoute is how Caddyfile.example placed the gateway's own handlers before they needed no
// matcher: each directive of its gateway site and what stood in its place.
var matchedRoute = []struct{ flat, matched string }{
	{"\n\tmediagw_models\n", "\n\t@models path /v1/models /v1/models/*\n\tmediagw_models @models\n"},
	{"\n\tmediagw_presign\n", "\n\tmediagw_presign /v1/upload/presign\n"},
	{"\n\tmediagw_video_tasks\n", "\n\tmediagw_video_tasks /api/v3/contents/generations/tasks*\n"},
	{"\n\tmediagw_videos\n", "\n\tmediagw_videos /v1/videos*\n"},
	{"\n\tmediagw_image_edits\n", "\n\t@image_edits path /v1/images/edits /v1/images/tasks/*\n\tmediagw_image_edits @image_edits\n"},
}

// flatRouteProbe is one request and the answer both routes must give it: the status and, for an
// error, its code, in the shape of the endpoint's protocol (the task API's under /api/v3/, else
// OpenAI's). In path, {task}, {video} and {image} stand for ids the probing key created.
type flatRouteProbe struct {
	method, path, body string
	status             int
	code               string
}

// flatRouteProbes reach every endpoint of each of the gateway's own handlers, and the near misses
// of their paths, which no handler takes and mediagw_route answers 404.
var flatRouteProbes = []flatRouteProbe{
	// mediagw_models
	{"GET", "/v1/models", "", 200, ""},
	{"HEAD", "/v1/models", "", 200, ""},
	{"GET", "/v1/models/demo-chat", "", 200, ""},
	{"POST", "/v1/models", "{}", 405, "method_not_allowed"},
	{"GET", "/v1/models/", "", 404, "not_found"},
	{"GET", "/v1/models//demo-chat", "", 404, "not_found"},
	{"GET", "/v1/models/x/y", "", 404, "model_not_found"},
	{"GET", "/v1/modelsX", "", 404, "not_found"},
	{"GET", "/V1/MODELS", "", 404, "not_found"},
	{"GET", "//v1/models", "", 404, "not_found"},
	{"GET", "/v1//models", "", 404, "not_found"},
	// a model's method goes on to mediagw_route
	{"POST", "/v1/models/demo-chat:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`, 200, ""},
	// mediagw_presign (the example configures no upload storage)
	{"POST", "/v1/upload/presign", `{"filename":"a.png"}`, 503, "upload_service_unavailable"},
	{"GET", "/v1/upload/presign", "", 405, "method_not_allowed"},
	{"POST", "/v1/upload/presign/", `{"filename":"a.png"}`, 404, "not_found"},
	{"POST", "/v1/upload/presignX", `{"filename":"a.png"}`, 404, "not_found"},
	{"POST", "/V1/UPLOAD/PRESIGN", `{"filename":"a.png"}`, 404, "not_found"},
	{"POST", "//v1/upload/presign", `{"filename":"a.png"}`, 404, "not_found"},
	{"POST", "/v1/upload//presign", `{"filename":"a.png"}`, 404, "not_found"},
	// mediagw_video_tasks
	{"GET", "/api/v3/contents/generations/tasks", "", 200, ""},
	{"GET", "/api/v3/contents/generations/tasks/{task}", "", 200, ""},
	{"GET", "/api/v3/contents/generations/tasks/{task}/content", "", 404, "not_found"},
	{"PUT", "/api/v3/contents/generations/tasks", "{}", 405, "method_not_allowed"},
	{"GET", "/api/v3/contents/generations/tasks/", "", 404, "not_found"},
	{"GET", "/api/v3/contents/generations/tasks//{task}", "", 404, "not_found"},
	{"GET", "/api/v3/contents/generations/tasks/{task}/x/y", "", 404, "not_found"},
	{"GET", "/api/v3/contents/generations/tasksX", "", 404, "not_found"},
	{"POST", "/api/v3/contents/generations/tasksX", `{"model":"demo-seedance-1-0-pro","content":[{"type":"text","text":"x"}]}`, 404, "not_found"},
	{"GET", "/API/V3/CONTENTS/GENERATIONS/TASKS", "", 404, "not_found"},
	{"GET", "//api/v3/contents/generations/tasks", "", 404, "not_found"},
	{"GET", "/api/v3//contents/generations/tasks", "", 404, "not_found"},
	{"DELETE", "/api/v3/contents/generations/tasks/{task}", "", 200, ""},
	// mediagw_videos
	{"GET", "/v1/videos", "", 200, ""},
	{"GET", "/v1/videos/{video}", "", 200, ""},
	{"GET", "/v1/videos/{video}/content", "", 409, "video_not_completed"},
	{"PUT", "/v1/videos/{video}", "{}", 405, "method_not_allowed"},
	{"GET", "/v1/videos/", "", 404, "not_found"},
	{"GET", "/v1/videos/{video}/x", "", 404, "not_found"},
	{"GET", "/v1/videosX", "", 404, "not_found"},
	{"POST", "/v1/videosX", `{"model":"demo-seedance-1-0-pro","prompt":"x"}`, 404, "not_found"},
	{"GET", "/V1/VIDEOS", "", 404, "not_found"},
	{"GET", "//v1/videos", "", 404, "not_found"},
	{"GET", "/v1//videos", "", 404, "not_found"},
	{"DELETE", "/v1/videos/{video}", "", 200, ""},
	// mediagw_image_edits
	{"POST", "/v1/images/edits", `{"model":"demo-image","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`, 200, ""},
	{"GET", "/v1/images/edits", "", 405, "method_not_allowed"},
	{"GET", "/v1/images/tasks/{image}", "", 200, ""},
	{"GET", "/v1/images/tasks/", "", 404, "not_found"},
	{"GET", "/v1/images/tasks/{image}/x", "", 404, "not_found"},
	{"GET", "/v1/images/tasks", "", 404, "not_found"},
	{"POST", "/v1/images/edits/", `{"model":"demo-image","prompt":"blue"}`, 404, "not_found"},
	{"POST", "/v1/images/editsX", `{"model":"demo-image","prompt":"blue"}`, 404, "not_found"},
	{"POST", "/V1/IMAGES/EDITS", `{"model":"demo-image","prompt":"blue"}`, 404, "not_found"},
	{"POST", "//v1/images/edits", `{"model":"demo-image","prompt":"blue"}`, 404, "not_found"},
	// mediagw_route: pass-through, and paths that are no endpoint
	{"POST", "/v1/chat/completions", `{"model":"demo-chat","messages":[{"role":"user","content":"hi"}]}`, 200, ""},
	{"POST", "/v1/images/generations", `{"model":"demo-image","prompt":"a cat"}`, 200, ""},
	{"GET", "/v1/files", "", 404, "not_found"},
	{"POST", "/v1/files", `{"model":"demo-chat"}`, 404, "not_found"},
	{"GET", "/nowhere", "", 404, "not_found"},
}

// TestFlatRouteAnswersAsMatched runs Caddyfile.example, whose route gives the gateway's own
// handlers no path matcher, beside the same file with the matchers it had before, and sends both
// every probe: each endpoint of each handler is reached, and every near miss of their paths
// (another case, a suffix, a trailing or doubled slash) is 404 in its endpoint's shape, in both
// routes alike. Before, a handler without a matcher took every request: mediagw_presign, first
// of them, answered chat completions 405.
func TestFlatRouteAnswersAsMatched(t *testing.T) {
	flatCfg, flatPorts := exampleCaddyfile(t)
	matchedCfg, matchedPorts := exampleCaddyfile(t)
	for _, d := range matchedRoute {
		if strings.Count(matchedCfg, d.flat) != 1 {
			t.Fatalf("Caddyfile.example's route no longer holds %q once; update this test", d.flat)
		}
		matchedCfg = strings.Replace(matchedCfg, d.flat, d.matched, 1)
	}
	answers := map[string][]flatRouteAnswer{}
	for _, g := range []struct {
		name string
		cfg  string
		port int
	}{{"flat", flatCfg, flatPorts.gateway}, {"matched", matchedCfg, matchedPorts.gateway}} {
		base := fmt.Sprintf("http://127.0.0.1:%d", g.port)
		startCaddyProcess(t, g.cfg, base+"/")
		answers[g.name] = probeOwnHandlers(t, g.name, base)
	}
	for i, p := range flatRouteProbes {
		if f, m := answers["flat"][i], answers["matched"][i]; f != m {
			t.Errorf("%s %s: flat route %+v, matched route %+v", p.method, p.path, f, m)
		}
	}
}

// flatRouteAnswer is what a probe compares: the status, and an error's code and shape.
type flatRouteAnswer struct {
	status      int
	code, shape string
}

// probeOwnHandlers creates a task, a video and an image task with the demo key, then sends each
// probe and checks its answer.
func probeOwnHandlers(t *testing.T, route, base string) []flatRouteAnswer {
	t.Helper()
	const key = "mg-demo-key"
	ids := map[string]string{
		"{task}": call(t, "POST", base+"/api/v3/contents/generations/tasks", key,
			`{"model":"demo-seedance-1-0-pro","content":[{"type":"text","text":"a lighthouse"}]}`).field("id"),
		"{video}": call(t, "POST", base+"/v1/videos", key, `{"model":"demo-seedance-1-0-pro","prompt":"a lighthouse"}`).field("id"),
		"{image}": call(t, "POST", base+"/v1/images/edits", key,
			`{"model":"demo-image-async","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`).field("id"),
	}
	for name, id := range ids {
		if id == "" {
			t.Fatalf("%s route: creating %s gave no id", route, name)
		}
	}
	var got []flatRouteAnswer
	for _, p := range flatRouteProbes {
		path := p.path
		for name, id := range ids {
			path = strings.ReplaceAll(path, name, id)
		}
		var body any
		if p.body != "" {
			body = p.body
		}
		// The path is sent as written: Go's client neither cleans it nor folds its case.
		r := call(t, p.method, base+path, key, body)
		a := flatRouteAnswer{status: r.status}
		if r.status >= 400 {
			a.code, a.shape = errorCodeAndShape(r)
			wantShape := "openai"
			if strings.HasPrefix(p.path, "/api/v3/") {
				wantShape = "task"
			}
			if a.code != p.code || a.shape != wantShape {
				t.Errorf("%s route: %s %s = %d %s, want %d %s in the %s shape", route, p.method, path, r.status, r.body, p.status, p.code, wantShape)
			}
		}
		if r.status != p.status {
			t.Errorf("%s route: %s %s = %d %.300s, want %d", route, p.method, path, r.status, r.body, p.status)
		}
		got = append(got, a)
	}
	return got
}

// errorCodeAndShape reads an error answer: the task API's ({"code","message","data"}) or
// OpenAI's ({"error":{"message","type","param","code"}}); "?" for anything else.
func errorCodeAndShape(r response) (code, shape string) {
	var b struct {
		Code  *string
		Error *struct {
			Code *string
			Type string
		}
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || json.Unmarshal(r.body, &b) != nil {
		return "", "?"
	}
	switch {
	case b.Code != nil && b.Error == nil:
		return *b.Code, "task"
	case b.Error != nil && b.Error.Code != nil && b.Error.Type != "":
		return *b.Error.Code, "openai"
	}
	return "", "?"
}

// TestNearMissesReachNoProvider sends the near misses of the gateway's own paths through the
// production sketch of Caddyfile.example, whose handlers have no matcher and whose providers are
// fakes that record every call: no handler takes them, mediagw_route answers each 404 not_found,
// and no provider is called, whatever model the body names.
func TestNearMissesReachNoProvider(t *testing.T) {
	env := startTenancyGateway(t)
	const key = "mg-customer-a"
	ark := `{"model":"doubao-seedance-1-0-lite-t2v-250428","content":[{"type":"text","text":"x"}]}`
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/V1/MODELS", ""},
		{"GET", "//v1/models", ""},
		{"GET", "/v1/modelsX", ""},
		{"POST", "/V1/UPLOAD/PRESIGN", `{"filename":"a.png"}`},
		{"POST", "/v1/upload/presign/", `{"filename":"a.png"}`},
		{"POST", "/api/v3/contents/generations/tasksX", ark},
		{"POST", "/api/v3//contents/generations/tasks", ark},
		{"POST", "//api/v3/contents/generations/tasks", ark},
		{"POST", "/API/V3/CONTENTS/GENERATIONS/TASKS", ark},
		{"POST", "/v1/videosX", `{"model":"sora-2","prompt":"x"}`},
		{"POST", "//v1/videos", `{"model":"sora-2","prompt":"x"}`},
		{"POST", "/V1/VIDEOS", `{"model":"sora-2","prompt":"x"}`},
		{"POST", "/v1/images/edits/", `{"model":"gpt-image-1","prompt":"x"}`},
		{"POST", "//v1/images/edits", `{"model":"gpt-image-1","prompt":"x"}`},
		{"GET", "/v1/images/tasksX/img_1", ""},
		{"POST", "/v1/files", `{"model":"gpt-4o-mini"}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := call(t, c.method, env.base+c.path, key, body)
		if code, _ := errorCodeAndShape(r); r.status != 404 || code != "not_found" {
			t.Errorf("%s %s = %d %s, want 404 not_found", c.method, c.path, r.status, r.body)
		}
	}
	for _, f := range []*providerFake{env.ark, env.openai} {
		if _, calls := f.seen(); len(calls) != 0 {
			t.Fatalf("a provider received %v", calls)
		}
	}
	// The endpoints themselves are reached.
	if r := call(t, "POST", env.base+"/api/v3/contents/generations/tasks", key, ark); r.status != 200 || r.field("id") == "" {
		t.Fatalf("task create = %d %s", r.status, r.body)
	}
}
