package integration

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file walk the interface contract (shared/spec/gateway-interface.md) rule by
// rule against one gateway in front of the simulator: each case names the section it checks. A
// value the contract accepts must be accepted (200), and one just outside a rule must be refused
// with the contract's status and code, in the endpoint's error shape.

const conformanceCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider video {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models seedance-sim
		}
		provider images {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models image-sim
		}
		key mg-spec {
			account spec
		}
		key mg-spec-other {
			account spec-other
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		@images path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @images
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

// specCase is one request body and the answer the contract requires for it. code "" means a
// success (200).
type specCase struct {
	section, name, body string
	status              int
	code                string
}

// checkTaskAnswer asserts the answer to a video task create: 200 {"id"} on success, or the
// request-level error body of section 7.1, {"code","message","data":null}, as JSON, with no
// other member (docs/api.md says the task API's errors have no param).
func checkTaskAnswer(t *testing.T, r response, tc specCase) {
	t.Helper()
	body := r.json(t)
	if tc.code == "" {
		if id, _ := body["id"].(string); r.status != 200 || id == "" {
			t.Errorf("%s %q: got %d %s, want 200 {id}", tc.section, tc.name, r.status, r.body)
		}
		return
	}
	msg, _ := body["message"].(string)
	data, hasData := body["data"]
	if r.status != tc.status || body["code"] != tc.code || msg == "" || !hasData || data != nil || len(body) != 3 ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("%s %q: got %d %s (%s), want %d code %s with data null", tc.section, tc.name, r.status, r.body, r.header.Get("Content-Type"), tc.status, tc.code)
	}
}

// checkOpenAIAnswer asserts an image edit answer: 200 with data[].url on success, or the OpenAI
// error shape {"error":{"message","type","param","code"}}.
func checkOpenAIAnswer(t *testing.T, r response, tc specCase) {
	t.Helper()
	body := r.json(t)
	if tc.code == "" {
		data, _ := body["data"].([]any)
		if r.status != 200 || len(data) == 0 {
			t.Errorf("%s %q: got %d %s, want 200 with data", tc.section, tc.name, r.status, r.body)
		}
		return
	}
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	_, typed := e["type"].(string)
	_, param := e["param"].(string)
	if r.status != tc.status || e["code"] != tc.code || msg == "" || !typed || !param {
		t.Errorf("%s %q: got %d %s, want %d code %s in the OpenAI shape", tc.section, tc.name, r.status, r.body, tc.status, tc.code)
	}
}

func TestSpecVideoTaskCreateRules(t *testing.T) {
	base, _ := startSimGateway(t, conformanceCaddyfile, nil)
	url := base + "/api/v3/contents/generations/tasks"
	text := `{"type":"text","text":"a lighthouse"}`
	image := `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"}}`
	video := `{"type":"video_url","video_url":{"url":"https://cdn.example.com/a.mp4"}}`
	audio := `{"type":"audio_url","audio_url":{"url":"https://cdn.example.com/a.mp3"}}`
	// with is a create body with the text item and one more top-level field.
	with := func(field string) string {
		return `{"model":"seedance-sim","content":[` + text + `],` + field + `}`
	}
	items := func(list ...string) string {
		return `{"model":"seedance-sim","content":[` + strings.Join(list, ",") + `]}`
	}
	ok := func(section, body string) specCase { return specCase{section, body, body, 200, ""} }
	bad := func(section, body string) specCase { return specCase{section, body, body, 400, "invalid_request"} }

	cases := []specCase{
		ok("2.2", items(text)),
		{"2.2 model", "missing", `{"content":[` + text + `]}`, 400, "missing_model"},
		{"2.2 model", "null", `{"model":null,"content":[` + text + `]}`, 400, "missing_model"},
		{"2.2 model", "empty", `{"model":"","content":[` + text + `]}`, 400, "missing_model"},
		bad("2.2 content", `{"model":"seedance-sim"}`),
		bad("2.2 content", `{"model":"seedance-sim","content":[]}`),
		bad("2.2 content", `{"model":"seedance-sim","content":`+text+`}`),
		bad("2.2 content: a text item", items(image)),
		bad("7.1 malformed JSON", `{"model":"seedance-sim","content":[`),
		bad("7.1 malformed JSON", `["seedance-sim"]`),
	}
	// Every enum value of the table is accepted, and a value outside it is not.
	for field, values := range map[string][]string{
		"service_tier": {"default", "flex"},
		"resolution":   {"480p", "720p", "1080p", "4k"},
		"ratio":        {"16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"},
	} {
		for _, v := range values {
			cases = append(cases, ok("2.2 "+field, with(fmt.Sprintf("%q:%q", field, v))))
		}
		cases = append(cases, bad("2.2 "+field, with(fmt.Sprintf("%q:%q", field, "other"))))
	}
	for _, field := range []string{"return_last_frame", "generate_audio", "draft", "camera_fixed", "watermark"} {
		cases = append(cases,
			ok("2.2 "+field, with(fmt.Sprintf("%q:true", field))),
			ok("2.2 "+field, with(fmt.Sprintf("%q:false", field))),
			bad("2.2 "+field+" is a boolean", with(fmt.Sprintf("%q:\"true\"", field))))
	}
	// Integer ranges: both ends accepted, one past each refused; a number that is not exactly
	// an integer is refused even where float64 would round it to one.
	for _, r := range []struct {
		field          string
		okays, refusal []string
	}{
		{"execution_expires_after", []string{"3600", "172800", "259200", "3600.0"}, []string{"3599", "259201", "3600.5", `"3600"`}},
		{"duration", []string{"-1", "2", "15", "5.0", "5e0"}, []string{"-2", "16", "5.5", "5.0000000000000000001", "1e-400"}},
		{"frames", []string{"29", "33", "289", "2.9e1"}, []string{"25", "28", "30", "290", "293", "29.0000000000000000001"}},
		{"seed", []string{"-1", "0", "4294967295"}, []string{"-2", "4294967296", "1e400", "0.00000000000000000001"}},
		{"priority", []string{"0", "1", "10"}, []string{"1.5", `"high"`, "1.0000000000000000001"}},
	} {
		for _, v := range r.okays {
			cases = append(cases, ok("2.2 "+r.field, with(fmt.Sprintf("%q:%s", r.field, v))))
		}
		for _, v := range r.refusal {
			cases = append(cases, bad("2.2 "+r.field, with(fmt.Sprintf("%q:%s", r.field, v))))
		}
	}
	cases = append(cases,
		ok("2.2 safety_identifier", with(`"safety_identifier":"user-1"`)),
		bad("2.2 safety_identifier", with(`"safety_identifier":1`)),
		ok("2.2 tools", with(`"tools":[{"type":"web_search"}]`)),
		bad("2.2 tools", with(`"tools":{"type":"web_search"}`)),
		bad("2.2 callback_url", with(`"callback_url":"/hooks"`)),
		// 2.2 rule 3: first/last-frame mode and reference mode are exclusive.
		ok("2.2 rule 3", items(text, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"first_frame"}`, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/b.png"},"role":"last_frame"}`)),
		ok("2.2 rule 3", items(text, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"reference_image"}`, `{"type":"video_url","video_url":{"url":"https://cdn.example.com/a.mp4"},"role":"reference_video"}`)),
		bad("2.2 rule 3", items(text, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"first_frame"}`, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/b.png"},"role":"reference_image"}`)),
		// 2.3 content items.
		ok("2.3 several text items", items(text, `{"type":"text","text":"at dawn"}`)),
		ok("2.3 image_url", items(text, image)),
		ok("2.3 video_url", items(text, video)),
		ok("2.3 audio_url with image", items(text, image, audio)),
		ok("2.3 audio_url with video", items(text, video, audio)),
		bad("2.3 rule 3: audio alone", items(text, audio)),
		bad("2.3 rule 4: empty text", items(`{"type":"text","text":""}`)),
		bad("2.3 rule 4: empty text", items(text, `{"type":"text","text":""}`)),
		bad("2.3 rule 4: empty image URL", items(text, `{"type":"image_url","image_url":{"url":""}}`)),
		bad("2.3 rule 4: empty video URL", items(text, `{"type":"video_url","video_url":{"url":""}}`)),
		bad("2.3 rule 4: empty audio URL", items(text, image, `{"type":"audio_url","audio_url":{"url":""}}`)),
		bad("2.3 draft_task", items(text, `{"type":"draft_task","draft_task":{"id":""}}`)),
		bad("2.3 rule 2: local path", items(text, `{"type":"image_url","image_url":{"url":"/home/me/a.png"}}`)),
		bad("2.3 rule 2: file URL", items(text, `{"type":"image_url","image_url":{"url":"file:///home/me/a.png"}}`)),
		bad("2.3 rule 2: Base64", items(text, `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`)),
		bad("2.3 rule 2: bare Base64", items(text, `{"type":"image_url","image_url":{"url":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}`)),
		bad("2.3 rule 2: presign upload url", items(text, `{"type":"image_url","image_url":{"url":"https://media.s3.amazonaws.com/uploads/a.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101&X-Amz-Signature=abc"}}`)),
		bad("2.3 rule 2: private address", items(text, `{"type":"video_url","video_url":{"url":"http://192.168.1.10/a.mp4"}}`)),
		bad("2.3 rule 1: with credentials", items(text, `{"type":"image_url","image_url":{"url":"https://user:pass@cdn.example.com/a.png"}}`)),
		specCase{"7.1", "unsupported content type", items(text, `{"type":"pdf_url","pdf_url":{"url":"https://cdn.example.com/a.pdf"}}`), 400, "unsupported_content_type"},
		// JSON text is UTF-8 (RFC 8259 8.1): a body that is not is malformed, whatever field holds
		// the bad bytes, since the provider would read them otherwise than the gateway did.
		bad("7.1 malformed JSON: not UTF-8", `{"model":"seedance-sim","content":[{"type":"text","text":"a light`+"\xff"+`house"}]}`),
		bad("7.1 malformed JSON: not UTF-8", with(`"safety_identifier":"user-`+"\xc3"+`"`)),
	)
	for _, tc := range cases {
		checkTaskAnswer(t, call(t, "POST", url, "mg-spec", tc.body), tc)
	}
	// 4.2: the body must be JSON; a Content-Type with a charset parameter is still JSON.
	for ctype, want := range map[string]int{"application/json; charset=utf-8": 200, "text/plain": 400} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(items(text)))
		req.Header.Set("Authorization", "Bearer mg-spec")
		req.Header.Set("Content-Type", ctype)
		if r := do(t, req); r.status != want {
			t.Fatalf("4.2 Content-Type %q: got %d %s, want %d", ctype, r.status, r.body, want)
		}
	}
}

func TestSpecImageEditRules(t *testing.T) {
	base, _ := startSimGateway(t, conformanceCaddyfile, nil)
	url := base + "/v1/images/edits"
	one := `"images":[{"image_url":"https://cdn.example.com/a.png"}]`
	with := func(field string) string {
		return `{"model":"image-sim","prompt":"make it blue",` + one + `,` + field + `}`
	}
	imagesOf := func(n int) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf(`{"image_url":"https://cdn.example.com/%d.png"}`, i)
		}
		return `{"model":"image-sim","prompt":"combine them","images":[` + strings.Join(list, ",") + `]}`
	}
	ok := func(section, body string) specCase { return specCase{section, body, body, 200, ""} }
	bad := func(section, body string) specCase { return specCase{section, body, body, 400, "invalid_request"} }
	cases := []specCase{
		ok("2.6", `{"model":"image-sim","prompt":"make it blue",`+one+`}`),
		{"2.6 model", "missing", `{"prompt":"p",` + one + `}`, 400, "missing_model"},
		{"2.6 model", "empty", `{"model":"","prompt":"p",` + one + `}`, 400, "missing_model"},
		bad("2.6 prompt", `{"model":"image-sim",`+one+`}`),
		bad("2.6 prompt", `{"model":"image-sim","prompt":"",`+one+`}`),
		bad("2.6 images", `{"model":"image-sim","prompt":"p"}`),
		bad("2.6 images", imagesOf(0)),
		ok("2.6 images", imagesOf(15)),
		bad("2.6 images", imagesOf(16)),
		ok("2.6 n", with(`"n":1`)),
		ok("2.6 n", with(`"n":10`)),
		ok("2.6 n", with(`"n":2.0`)),
		bad("2.6 n", with(`"n":0`)),
		bad("2.6 n", with(`"n":11`)),
		bad("2.6 n", with(`"n":1.5`)),
		bad("2.6 n", with(`"n":1.0000000000000000001`)),
		bad("2.6 n", with(`"n":"2"`)),
		bad("2.6 rule 2: local path", `{"model":"image-sim","prompt":"p","images":[{"image_url":"./a.png"}]}`),
		bad("2.6 rule 2: Base64", `{"model":"image-sim","prompt":"p","images":[{"image_url":"data:image/png;base64,iVBORw0KGgo="}]}`),
		bad("2.6 rule 2: presign upload url", `{"model":"image-sim","prompt":"p","images":[{"image_url":"https://media.s3.amazonaws.com/a.png?X-Amz-Signature=abc&X-Amz-Credential=x"}]}`),
		bad("2.6 rule 1: private address", `{"model":"image-sim","prompt":"p","images":[{"image_url":"http://10.1.2.3/a.png"}]}`),
		{"2.6", "malformed JSON", `{"model":"image-sim"`, 400, "invalid_request_body"},
		{"2.6", "not UTF-8", `{"model":"image-sim","prompt":"make it ` + "\xff" + `",` + one + `}`, 400, "invalid_request_body"},
		// A repeated key, or one that differs from a field only by case, is a field that breaks
		// a rule (docs/api.md, Errors): invalid_request, as on the task API.
		bad("2.6 repeated key", `{"model":"image-sim","prompt":"a","prompt":"b",`+one+`}`),
		bad("2.6 key in another case", `{"model":"image-sim","Prompt":"a","prompt":"b",`+one+`}`),
		bad("2.6 repeated key in an images item", `{"model":"image-sim","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png","image_url":"https://cdn.example.com/b.png"}]}`),
	}
	for field, values := range map[string][]string{
		"size": {"1024x1024", "1536x864", "864x1536", "1360x1024", "1024x1360", "1536x1024", "1024x1536", "2048x2048",
			"3072x1728", "1728x3072", "2720x2048", "2048x2720", "3072x2048", "2048x3072", "2880x2880", "3840x2160",
			"2160x3840", "3328x2496", "2496x3328", "3520x2336", "2336x3520"},
		"quality":         {"auto", "low", "medium", "high"},
		"output_format":   {"jpeg", "png", "webp"},
		"moderation":      {"auto", "low"},
		"response_format": {"url"},
	} {
		for _, v := range values {
			cases = append(cases, ok("2.6 "+field, with(fmt.Sprintf("%q:%q", field, v))))
		}
		cases = append(cases, bad("2.6 "+field, with(fmt.Sprintf("%q:%q", field, "b64_json"))))
	}
	for _, tc := range cases {
		checkOpenAIAnswer(t, call(t, "POST", url, "mg-spec", tc.body), tc)
	}
}

func TestSpecVideoTaskListRules(t *testing.T) {
	base, _ := startSimGateway(t, conformanceCaddyfile, nil)
	url := base + "/api/v3/contents/generations/tasks"
	var ids []string
	for i := range 3 {
		r := call(t, "POST", url, "mg-spec", fmt.Sprintf(`{"model":"seedance-sim","content":[{"type":"text","text":"task %d"}]}`, i))
		if r.status != 200 {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		ids = append(ids, r.field("id"))
	}
	// Paged, newest first (to the second: tasks created in one second come in no set order);
	// total counts every task of the account, and the pages hold each task once.
	type page struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
		Total int `json:"total"`
	}
	var p page
	seen := map[string]int{}
	for num, want := range map[int]int{1: 2, 2: 1, 3: 0} {
		decodeJSON(t, call(t, "GET", fmt.Sprintf("%s?page_size=2&page_num=%d", url, num), "mg-spec", nil).body, &p)
		if p.Total != 3 || len(p.Items) != want {
			t.Fatalf("page %d = %+v, want %d of 3 tasks", num, p, want)
		}
		for _, it := range p.Items {
			seen[it.ID]++
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("the pages hold %s %d times: %v", id, seen[id], seen)
		}
	}
	decodeJSON(t, call(t, "GET", url+"?filter.task_ids="+ids[1]+"&filter.task_ids="+ids[2], "mg-spec", nil).body, &p)
	if p.Total != 2 || len(p.Items) != 2 || p.Items[0].ID == p.Items[1].ID ||
		p.Items[0].ID != ids[1] && p.Items[0].ID != ids[2] || p.Items[1].ID != ids[1] && p.Items[1].ID != ids[2] {
		t.Fatalf("filter.task_ids = %+v", p)
	}
	decodeJSON(t, call(t, "GET", url+"?filter.status=succeeded", "mg-spec", nil).body, &p)
	for _, it := range p.Items {
		if it.Status != "succeeded" {
			t.Fatalf("filter.status=succeeded listed %+v", it)
		}
	}
	// 4.3: another account sees none of them, in the list or by id.
	decodeJSON(t, call(t, "GET", url+"?filter.task_ids="+ids[0], "mg-spec-other", nil).body, &p)
	if p.Total != 0 || len(p.Items) != 0 {
		t.Fatalf("another account listed %+v", p)
	}
	for _, method := range []string{"GET", "DELETE"} {
		r := call(t, method, url+"/"+ids[0], "mg-spec-other", nil)
		checkTaskAnswer(t, r, specCase{"4.3", method + " another account's task", "", 400, "task_not_exist"})
	}
	for _, q := range []string{"page_size=0", "page_size=501", "page_size=x", "page_num=0", "page_num=-1", "page_num=1073741825",
		"filter.status=done", "filter.task_ids=cgt-x" + strings.Repeat("&filter.task_ids=cgt-x", 100)} {
		r := call(t, "GET", url+"?"+q, "mg-spec", nil)
		checkTaskAnswer(t, r, specCase{"list", q, "", 400, "invalid_request"})
	}
	for _, q := range []string{"page_size=1", "page_size=500", "page_num=1073741824"} {
		if r := call(t, "GET", url+"?"+q, "mg-spec", nil); r.status != 200 {
			t.Fatalf("list %s = %d %s", q, r.status, r.body)
		}
	}
}

// TestSpecVideoTaskQueryAndDelete checks the §2.5 query answer in each state (§4.3 examples),
// a failed task as §7.2 has it, and what a DELETE does in each state.
func TestSpecVideoTaskQueryAndDelete(t *testing.T) {
	base, _ := startSimGateway(t, conformanceCaddyfile, nil)
	url := base + "/api/v3/contents/generations/tasks"
	create := func(prompt, extra string) string {
		r := call(t, "POST", url, "mg-spec", `{"model":"seedance-sim","content":[{"type":"text","text":"`+prompt+`"}]`+extra+`}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return r.field("id")
	}
	withFrame, plain, failing, cancelled := create("with a last frame", `,"return_last_frame":true`), create("plain", ""),
		create("this one fails [[fail]]", ""), create("cancel me", "")

	// queued: error null, content empty, the required fields typed as §2.5 says.
	got := call(t, "GET", url+"/"+plain, "mg-spec", nil).json(t)
	if got["id"] != plain || got["model"] != "seedance-sim" || got["status"] != "queued" || got["error"] != nil {
		t.Fatalf("queued task = %v", got)
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if n, ok := got[k].(float64); !ok || n != float64(int64(n)) || n < 1.7e9 {
			t.Fatalf("%s = %v, want Unix seconds", k, got[k])
		}
	}
	if c, ok := got["content"].(map[string]any); !ok || len(c) != 0 {
		t.Fatalf("queued content = %v, want {}", got["content"])
	}
	// DELETE of a queued task cancels it (200); the query then reads cancelled.
	if r := call(t, "DELETE", url+"/"+cancelled, "mg-spec", nil); r.status != 200 {
		t.Fatalf("DELETE queued = %d %s", r.status, r.body)
	}
	if s := call(t, "GET", url+"/"+cancelled, "mg-spec", nil).field("status"); s != "cancelled" {
		t.Fatalf("after cancel status = %q", s)
	}

	final := func(id string) map[string]any {
		var m map[string]any
		waitFor(t, id+" to finish", func() bool {
			m = call(t, "GET", url+"/"+id, "mg-spec", nil).json(t)
			return m["status"] == "succeeded" || m["status"] == "failed"
		})
		return m
	}
	// succeeded: content.video_url; last_frame_url only when asked for.
	got = final(withFrame)
	c, _ := got["content"].(map[string]any)
	if got["status"] != "succeeded" || got["error"] != nil || c["video_url"] == nil || c["last_frame_url"] == nil {
		t.Fatalf("succeeded with return_last_frame = %v", got)
	}
	got = final(plain)
	c, _ = got["content"].(map[string]any)
	if _, has := c["last_frame_url"]; got["status"] != "succeeded" || c["video_url"] == nil || has {
		t.Fatalf("succeeded without return_last_frame = %v", got)
	}
	// failed (§7.2): still HTTP 200, error with message (and code), content empty.
	r := call(t, "GET", url+"/"+failing, "mg-spec", nil)
	got = final(failing)
	e, _ := got["error"].(map[string]any)
	c, _ = got["content"].(map[string]any)
	if r.status != 200 || got["status"] != "failed" || e["message"] == nil || len(c) != 0 {
		t.Fatalf("failed task = %d %v", r.status, got)
	}
	// DELETE of a finished task deletes it: the id then answers task_not_exist.
	for _, id := range []string{plain, failing} {
		if r := call(t, "DELETE", url+"/"+id, "mg-spec", nil); r.status != 200 {
			t.Fatalf("DELETE finished = %d %s", r.status, r.body)
		}
		checkTaskAnswer(t, call(t, "GET", url+"/"+id, "mg-spec", nil), specCase{"4.3", "deleted task", "", 400, "task_not_exist"})
	}
	// Ids that are no task of the account, however they are written, are task_not_exist.
	for _, id := range []string{"cgt-unknown", strings.Repeat("a", 4096), "%00", "%ff", "cgt%20x"} {
		for _, method := range []string{"GET", "DELETE"} {
			checkTaskAnswer(t, call(t, method, url+"/"+id, "mg-spec", nil), specCase{"4.3", method + " " + id[:min(len(id), 12)], "", 400, "task_not_exist"})
		}
	}
	// §5.7 and §7.1: no key or an unknown one is 401 in the task shape.
	for _, key := range []string{"", "mg-unknown"} {
		r := call(t, "GET", url+"/"+withFrame, key, nil)
		body := r.json(t)
		if data, has := body["data"]; r.status != 401 || body["code"] == nil || body["message"] == nil || !has || data != nil {
			t.Fatalf("key %q = %d %s", key, r.status, r.body)
		}
	}
}

// TestSpecPresignDefaultRateLimit checks §8: without a configured limit, presign allows 100
// calls per 60 seconds per API key (not per account or address) and answers the 101st 429 with
// Retry-After; UPLOAD_RATE_LIMIT and UPLOAD_RATE_LIMIT_DURATION change it, and
// UPLOAD_RATE_LIMIT_ENABLE=false turns it off. Signing is local, so no storage needs to run.
func TestSpecPresignDefaultRateLimit(t *testing.T) {
	upload := `upload {
			bucket media
			endpoint http://127.0.0.1:9
			path_style
			access_key_id spec-access
			secret_access_key spec-secret
		}`
	start := func() string {
		port := freePort(t)
		startGateway(t, presignCaddyfile, map[string]string{"port": fmt.Sprint(port), "upload": upload})
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	limited := func(base, key string) response {
		r, _ := presignFile(t, base, key, `{"filename":"a.png","content_type":"image/png"}`)
		return r
	}
	checkLimited := func(r response, window int) {
		t.Helper()
		e, _ := r.json(t)["error"].(map[string]any)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || e["code"] != "rate_limit_exceeded" || err != nil || retry < 1 || retry > window {
			t.Fatalf("over the limit = %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
		}
	}

	t.Run("default 100 per 60s", func(t *testing.T) {
		base := start()
		for i := range 100 {
			if r := limited(base, "mg-uploader"); r.status != 200 {
				t.Fatalf("call %d = %d %s", i+1, r.status, r.body)
			}
		}
		checkLimited(limited(base, "mg-uploader"), 60)
		if r := limited(base, "mg-second"); r.status != 200 {
			t.Fatalf("another key of the account = %d %s, want its own 100", r.status, r.body)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		t.Setenv("UPLOAD_RATE_LIMIT", "2")
		t.Setenv("UPLOAD_RATE_LIMIT_DURATION", "30")
		base := start()
		for range 2 {
			if r := limited(base, "mg-uploader"); r.status != 200 {
				t.Fatalf("presign = %d %s", r.status, r.body)
			}
		}
		checkLimited(limited(base, "mg-uploader"), 30)
	})
	t.Run("turned off", func(t *testing.T) {
		t.Setenv("UPLOAD_RATE_LIMIT_ENABLE", "false")
		t.Setenv("UPLOAD_RATE_LIMIT", "1")
		base := start()
		for i := range 3 {
			if r := limited(base, "mg-uploader"); r.status != 200 {
				t.Fatalf("call %d = %d %s", i+1, r.status, r.body)
			}
		}
	})
}
