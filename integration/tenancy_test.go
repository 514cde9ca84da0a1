package integration

import (
	"bufio"
	"bytes"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tenancyCaddyfile is the production sketch of Caddyfile.example (and docs/providers.md's pass-through
// section) exactly as written, with loopback fakes for the providers' addresses: the mediagw
// handlers without a matcher, mediagw_route after the others, and one reverse_proxy per provider.
// The ark fake decodes JSON as Go does (keys case-insensitive, last wins); the openai fake reads
// exact keys, first wins.
const tenancyCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url {{ark_url}}/api/v3
			api_key  ark-operator-key
			models   doubao-seedance-1-0-pro-250528 doubao-seedance-1-0-lite-t2v-250428
		}
		provider openai {
			base_url {{openai_url}}/v1
			api_key  openai-operator-key
			models   gpt-image-1 gpt-image-2 gpt-4o-mini gpt-5 sora-2 sora-2-pro whisper-1 whisper-large
		}
		key mg-customer-a {
			account customer-a
			models  doubao-seedance-1-0-lite-t2v-250428 gpt-image-1 gpt-4o-mini sora-2 whisper-1
		}
		key mg-customer-b {
			account customer-b
			models  doubao-seedance-* gpt-* sora-2
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models
		mediagw_presign
		mediagw_video_tasks
		mediagw_image_edits
		mediagw_route{{route_options}}
		@ark vars {mediagw.provider} ark
		reverse_proxy @ark {{ark_url}} {
			header_up Host {upstream_hostport}
		}
		@openai vars {mediagw.provider} openai
		reverse_proxy @openai {{openai_url}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

type tenancyEnv struct {
	base        string
	ark, openai *providerFake
}

// startTenancyGateway runs the sketch; routeOptions, when given, is a block for mediagw_route.
func startTenancyGateway(t *testing.T, routeOptions ...string) tenancyEnv {
	t.Helper()
	ark, oa := newProviderFake(t, true), newProviderFake(t, false)
	options := ""
	if len(routeOptions) > 0 {
		options = " {\n\t\t\t" + strings.Join(routeOptions, "\n\t\t\t") + "\n\t\t}"
	}
	base, _ := startSimGateway(t, tenancyCaddyfile, map[string]string{"ark_url": ark.URL, "openai_url": oa.URL, "route_options": options})
	return tenancyEnv{base: base, ark: ark, openai: oa}
}

// requireOnlyModels fails if a fake ran a model other than the allowed ones.
func requireOnlyModels(t *testing.T, f *providerFake, allowed ...string) {
	t.Helper()
	models, _ := f.seen()
	for _, m := range models {
		if !slices.Contains(allowed, m) {
			t.Fatalf("the upstream ran model %q; the key allows only %v (all runs: %v)", m, allowed, models)
		}
	}
}

// TestModelSmugglingIsRefused tries, as customer-a whose key allows the lite model and
// gpt-4o-mini/gpt-image-1/sora-2/whisper-1 only, to make an upstream run another model by
// repeating the model key or spelling it in another case, on every body the gateway checks.
func TestModelSmugglingIsRefused(t *testing.T) {
	env := startTenancyGateway(t)
	const key = "mg-customer-a"
	smuggled := func(allowed, other string) []string {
		return []string{
			`{"model":"` + allowed + `","Model":"` + other + `"`,
			`{"MODEL":"` + other + `","model":"` + allowed + `"`,
			`{"model":"` + allowed + `","model":"` + other + `"`,
			`{"model":"` + other + `","model":"` + allowed + `"`,
			`{"model":"` + allowed + `","mod\u0065l":"` + other + `"`,
			`{"model":"` + allowed + `","\u004dODEL":"` + other + `"`,
			`{"model":"` + allowed + `","mod` + "\xff" + `el":"` + other + `"`,
		}
	}
	text := `"content":[{"type":"text","text":"a cat"}]`
	for _, tc := range []struct {
		name, path, allowed, other, rest string
		taskShape                        bool
	}{
		{"video task API", "/api/v3/contents/generations/tasks", "doubao-seedance-1-0-lite-t2v-250428", "doubao-seedance-1-0-pro-250528", text, true},
		{"image edits", "/v1/images/edits", "gpt-image-1", "gpt-image-2", `"prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]`, false},
		{"chat pass-through to a case-insensitive upstream", "/v1/chat/completions", "doubao-seedance-1-0-lite-t2v-250428", "doubao-seedance-1-0-pro-250528", `"messages":[]`, false},
		{"chat pass-through to an exact upstream", "/v1/chat/completions", "gpt-4o-mini", "gpt-5", `"messages":[]`, false},
		{"videos pass-through", "/v1/videos", "sora-2", "sora-2-pro", `"prompt":"a cat"`, false},
		{"image generations pass-through", "/v1/images/generations", "gpt-image-1", "gpt-image-2", `"prompt":"a cat"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The allowed model goes through: the test reaches the upstream.
			if r := call(t, "POST", env.base+tc.path, key, `{"model":"`+tc.allowed+`",`+tc.rest+`}`); r.status != 200 {
				t.Fatalf("allowed request = %d %s", r.status, r.body)
			}
			for _, prefix := range smuggled(tc.allowed, tc.other) {
				r := call(t, "POST", env.base+tc.path, key, prefix+","+tc.rest+"}")
				body := r.json(t)
				if tc.taskShape {
					msg, _ := body["message"].(string)
					if r.status != 400 || body["code"] != "invalid_request" || body["data"] != nil || !strings.Contains(msg, "model") {
						t.Fatalf("%s = %d %s", prefix, r.status, r.body)
					}
					continue
				}
				e, _ := body["error"].(map[string]any)
				if r.status != 400 || e["param"] != "model" || !strings.Contains(e["message"].(string), "model") {
					t.Fatalf("%s = %d %s", prefix, r.status, r.body)
				}
			}
		})
	}
	requireOnlyModels(t, env.ark, "doubao-seedance-1-0-lite-t2v-250428")
	requireOnlyModels(t, env.openai, "gpt-image-1", "gpt-4o-mini", "sora-2")

	// Multipart: a second model part, in any spelling, is refused; both fakes see only whisper-1.
	for _, second := range []string{`name="model"`, `name="MODEL"`, `name*=UTF-8''model`, `name="%6Dodel"`} {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("model", "whisper-1")
		fw, _ := mw.CreateFormFile("file", "a.wav")
		fw.Write([]byte("RIFF"))
		body.WriteString("\r\n--" + mw.Boundary() + "\r\nContent-Disposition: form-data; " + second + "\r\n\r\nwhisper-large")
		mw.Close()
		req, _ := http.NewRequest("POST", env.base+"/v1/audio/transcriptions", &body)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if r := do(t, req); r.status != 400 || r.json(t)["error"].(map[string]any)["param"] != "model" {
			t.Fatalf("second model part %s = %d %s", second, r.status, r.body)
		}
	}
	requireOnlyModels(t, env.openai, "gpt-image-1", "gpt-4o-mini", "sora-2")
}

// TestPassThroughForwardsOnlyCapabilities places the route as the production sketch does and
// tries the provider endpoints that act on the whole upstream account.
func TestPassThroughForwardsOnlyCapabilities(t *testing.T) {
	env := startTenancyGateway(t)
	ark := `{"model":"doubao-seedance-1-0-lite-t2v-250428"}`
	// Each row carries its answer. Every one is 404 not_found in the OpenAI shape, without an
	// Allow header (DESIGN §7: anything but a capability's method and path is 404 unless the
	// operator adds it): a provider path that is not forwarded (mediagw_route answers), a
	// forwarded path with another method (GET /v1/videos would list the whole upstream account's
	// videos), and an object of another account, whose answer names the id (param "id") and is
	// the answer to an id that does not exist.
	for _, tc := range []struct {
		method, path, body string
		param              string
	}{
		{"GET", "/v3/contents/generations/tasks?page_size=500", ark, ""},
		{"GET", "/v3/contents/generations/tasks/cgt-of-customer-b", ark, ""},
		{"DELETE", "/v3/contents/generations/tasks/cgt-of-customer-b", ark, ""},
		{"POST", "/v3/contents/generations/tasks", ark, ""},
		{"GET", "/v1/files", `{"model":"gpt-4o-mini"}`, ""},
		{"GET", "/v1/videos", `{"model":"sora-2"}`, ""},
		{"GET", "/v1/videos/video_of_customer_b", `{"model":"sora-2"}`, "id"},
		{"GET", "/v1/responses/resp_of_customer_b", `{"model":"gpt-4o-mini"}`, "id"},
		{"DELETE", "/v1/responses/resp_of_customer_b", "", "id"},
		{"GET", "/v1/chat/completions", `{"model":"gpt-4o-mini"}`, ""},
		{"POST", "/v1/batches", `{"model":"gpt-4o-mini"}`, ""},
		{"POST", "/v2/chat/completions", `{"model":"gpt-4o-mini"}`, ""},
		{"POST", "/v1beta/models/gpt-4o-mini:predict", `{}`, ""},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		r := call(t, tc.method, env.base+tc.path, "mg-customer-a", body)
		requireNotFound(t, r, tc.method+" "+tc.path, "not_found", tc.param)
	}
	for _, f := range []*providerFake{env.ark, env.openai} {
		if _, calls := f.seen(); len(calls) != 0 {
			t.Fatalf("the upstream received %v", calls)
		}
	}
	// The capabilities themselves still work.
	if r := call(t, "POST", env.base+"/v1/chat/completions", "mg-customer-a", `{"model":"gpt-4o-mini","messages":[]}`); r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
}

// TestCreatedObjectsBelongToTheirAccount creates videos, responses (stored and streamed),
// video generations and image tasks as customer-a, then tries to use them as customer-b.
func TestCreatedObjectsBelongToTheirAccount(t *testing.T) {
	env := startTenancyGateway(t)
	a, b := "mg-customer-a", "mg-customer-b"
	create := func(path, body string) string {
		t.Helper()
		r := call(t, "POST", env.base+path, a, body)
		id := r.field("id")
		if id == "" {
			id = r.field("task_id")
		}
		if r.status != 200 || id == "" {
			t.Fatalf("create %s = %d %s", path, r.status, r.body)
		}
		return id
	}
	video := create("/v1/videos", `{"model":"sora-2","prompt":"a cat"}`)
	response := create("/v1/responses", `{"model":"gpt-4o-mini","input":"hi"}`)
	generation := create("/v1/video/generations", `{"model":"sora-2","prompt":"a cat"}`)
	image := create("/v1/images/generations", `{"model":"gpt-image-1","prompt":"a cat"}`)

	// A streamed response stays streamed (its first event arrives while the upstream holds the
	// rest), and its id is recorded from that event.
	env.openai.hold = make(chan struct{})
	defer close(env.openai.hold)
	req, _ := http.NewRequest("POST", env.base+"/v1/responses", strings.NewReader(`{"model":"gpt-4o-mini","input":"hi","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+a)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	first, err := bufio.NewReader(resp.Body).ReadString('}')
	env.openai.hold <- struct{}{}
	resp.Body.Close()
	_, streamed, _ := strings.Cut(first, `"id":"`)
	streamed, _, _ = strings.Cut(streamed, `"`)
	if err != nil || !strings.HasPrefix(streamed, "resp_") {
		t.Fatalf("first event %q, %v", first, err)
	}

	owned := []struct{ method, path string }{
		{"GET", "/v1/videos/" + video}, {"GET", "/v1/videos/" + video + "/content"}, {"DELETE", "/v1/videos/" + video},
		{"GET", "/v1/responses/" + response}, {"GET", "/v1/responses/" + response + "/input_items"},
		{"GET", "/v1/responses/" + streamed}, {"DELETE", "/v1/responses/" + streamed},
		{"GET", "/v1/video/generations/" + generation}, {"GET", "/v1/images/tasks/" + image},
	}
	for _, o := range owned {
		if r := call(t, o.method, env.base+o.path, a, nil); r.status != 200 {
			t.Fatalf("owner %s %s = %d %s", o.method, o.path, r.status, r.body)
		}
	}
	_, before := env.openai.seen()
	unknown := func(path string) string {
		return strings.NewReplacer(video, "video_unknown", response, "resp_unknown", streamed, "resp_unknown2",
			generation, "vg_unknown", image, "imgt_unknown").Replace(path)
	}
	for _, o := range owned {
		theirs := call(t, o.method, env.base+o.path, b, nil)
		nobodys := call(t, o.method, env.base+unknown(o.path), b, nil)
		// mediagw_route's objects name the id; an image task is mediagw_image_edits' own answer.
		code, param := "not_found", "id"
		if strings.HasPrefix(o.path, "/v1/images/tasks/") {
			code, param = "task_not_found", ""
		}
		requireNotFound(t, theirs, "customer-b "+o.method+" "+o.path, code, param)
		if theirs.status != nobodys.status || string(theirs.body) != string(nobodys.body) {
			t.Fatalf("customer-b %s %s = %d %s; an unknown id = %d %s", o.method, o.path, theirs.status, theirs.body, nobodys.status, nobodys.body)
		}
	}
	// References in bodies: previous_response_id and remix.
	for _, ref := range []string{response, "resp_unknown"} {
		r := call(t, "POST", env.base+"/v1/responses", b, `{"model":"gpt-4o-mini","input":"more","previous_response_id":"`+ref+`"}`)
		if e, _ := r.json(t)["error"].(map[string]any); r.status != 400 || e["param"] != "previous_response_id" {
			t.Fatalf("customer-b continues %s = %d %s", ref, r.status, r.body)
		}
	}
	requireNotFound(t, call(t, "POST", env.base+"/v1/videos/"+video+"/remix", b, `{"prompt":"again"}`), "customer-b remixes", "not_found", "id")
	if _, after := env.openai.seen(); len(after) != len(before) {
		t.Fatalf("customer-b's attempts reached the upstream: %v", after[len(before):])
	}
	// The owner may continue and remix; the remix is hers too.
	if r := call(t, "POST", env.base+"/v1/responses", a, `{"model":"gpt-4o-mini","input":"more","previous_response_id":"`+response+`"}`); r.status != 200 {
		t.Fatalf("owner continues = %d %s", r.status, r.body)
	}
	remix := call(t, "POST", env.base+"/v1/videos/"+video+"/remix", a, `{"prompt":"again"}`)
	if remix.status != 200 || call(t, "GET", env.base+"/v1/videos/"+remix.field("id"), b, nil).status != 404 ||
		call(t, "GET", env.base+"/v1/videos/"+remix.field("id"), a, nil).status != 200 {
		t.Fatalf("remix = %d %s", remix.status, remix.body)
	}

	// draft_task.id in a video task create must be the caller's own task.
	task := call(t, "POST", env.base+"/api/v3/contents/generations/tasks", a, `{"model":"doubao-seedance-1-0-lite-t2v-250428","content":[{"type":"text","text":"draft"}],"draft":true}`)
	if task.status != 200 {
		t.Fatalf("draft create = %d %s", task.status, task.body)
	}
	for _, id := range []string{task.field("id"), "cgt-unknown"} {
		r := call(t, "POST", env.base+"/api/v3/contents/generations/tasks", b,
			`{"model":"doubao-seedance-1-0-lite-t2v-250428","content":[{"type":"text","text":"final"},{"type":"draft_task","draft_task":{"id":"`+id+`"}}]}`)
		if r.status != 400 || r.json(t)["code"] != "invalid_request" || !strings.Contains(r.field("message"), "draft_task.id") {
			t.Fatalf("customer-b uses draft %s = %d %s", id, r.status, r.body)
		}
	}
}

// TestMultipartSpoolIsBoundedAndRemoved sends a body past max_spool (1MiB here) and checks the
// 413, and that no spool file stays open in the gateway (which runs in this process).
func TestMultipartSpoolIsBoundedAndRemoved(t *testing.T) {
	env := startTenancyGateway(t, "max_spool 1MiB", "spool_memory 64KiB")
	send := func(size int) response {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("model", "whisper-1")
		fw, _ := mw.CreateFormFile("file", "a.wav")
		fw.Write(bytes.Repeat([]byte("a"), size))
		mw.Close()
		req, _ := http.NewRequest("POST", env.base+"/v1/audio/transcriptions", &body)
		req.Header.Set("Authorization", "Bearer mg-customer-a")
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return do(t, req)
	}
	if r := send(900 << 10); r.status != 200 {
		t.Fatalf("under max_spool = %d %s", r.status, r.body)
	}
	r := send(2 << 20)
	if e, _ := r.json(t)["error"].(map[string]any); r.status != 413 || e["code"] != "request_too_large" {
		t.Fatalf("past max_spool = %d %s", r.status, r.body)
	}
	if _, calls := env.openai.seen(); len(calls) != 1 {
		t.Fatalf("the upstream received %v", calls)
	}
	deadline := time.Now().Add(60 * time.Second) // a generous wait: it ends as soon as the condition holds
	for {
		open := openSpoolFiles(t)
		if len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool files still open: %v", open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(os.TempDir(), "mediagw-spool-*")); len(leftovers) != 0 {
		t.Fatalf("spool files left in %s: %v", os.TempDir(), leftovers)
	}
}

// openSpoolFiles lists this process's open file descriptors that point at spool files.
func openSpoolFiles(t *testing.T) []string {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, "mediagw-spool-") {
			open = append(open, target)
		}
	}
	return open
}

func TestTaskIDFilterIsBounded(t *testing.T) {
	env := startTenancyGateway(t)
	q := strings.Repeat("&filter.task_ids=cgt-x", 101)
	r := call(t, "GET", env.base+"/api/v3/contents/generations/tasks?page_size=10"+q, "mg-customer-a", nil)
	if r.status != 400 || r.json(t)["code"] != "invalid_request" || !strings.Contains(r.field("message"), "filter.task_ids") {
		t.Fatalf("101 ids = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", env.base+"/api/v3/contents/generations/tasks?page_size=10"+q[len("&filter.task_ids=cgt-x"):], "mg-customer-a", nil); r.status != 200 {
		t.Fatalf("100 ids = %d %s", r.status, r.body)
	}
}

// TestOperatorAddsAnEndpoint forwards more endpoints through the endpoint subdirective: they
// then work like a capability (model checked, a body may name only the caller's objects: those of
// the capability an endpoint extends), and nothing else opens with them.
func TestOperatorAddsAnEndpoint(t *testing.T) {
	env := startTenancyGateway(t, "endpoint POST /v1/moderations", "endpoint POST /v1/responses/compact")
	for path, body := range map[string]string{
		"/v1/moderations":       `{"model":"gpt-4o-mini","input":[{"type":"image_url","file_id":"file-of-another"}]}`,
		"/v1/responses/compact": `{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"msg_of_another"}]}`,
	} {
		if r := call(t, "POST", env.base+path, "mg-customer-a", body); r.status != 400 {
			t.Fatalf("added endpoint %s naming another's object = %d %s", path, r.status, r.body)
		}
	}
	if r := call(t, "POST", env.base+"/v1/moderations", "mg-customer-a", `{"model":"gpt-4o-mini","input":"x"}`); r.status != 200 || r.field("path") != "/v1/moderations" {
		t.Fatalf("added endpoint = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", env.base+"/v1/moderations", "mg-customer-a", `{"model":"gpt-5","input":"x"}`); r.status != 403 {
		t.Fatalf("added endpoint, model outside the key = %d %s", r.status, r.body)
	}
	// The endpoint opens its method and path only: another method on its path, a path below
	// it, and any other path stay 404.
	for _, tc := range []struct{ method, path string }{{"GET", "/v1/moderations"}, {"POST", "/v1/moderations/x"}, {"POST", "/v1/files"}} {
		r := call(t, tc.method, env.base+tc.path, "mg-customer-a", `{"model":"gpt-4o-mini"}`)
		requireNotFound(t, r, tc.method+" "+tc.path, "not_found", "")
	}
	if _, calls := env.openai.seen(); len(calls) != 1 {
		t.Fatalf("the upstream received %v", calls)
	}
}

// requireNotFound fails unless r is a 404 in the OpenAI shape: type not_found_error, the given
// code and param, a message, and no Allow header.
func requireNotFound(t *testing.T, r response, what, code, param string) {
	t.Helper()
	e := r.apiError(t)
	if r.status != 404 || e.kind != "not_found" || e.code != code || e.param != param || e.message == "" || r.header.Get("Allow") != "" {
		t.Errorf("%s = %d (Allow %q) %s; want 404 not_found_error/%s, param %q, no Allow", what, r.status, r.header.Get("Allow"), r.body, code, param)
	}
}
