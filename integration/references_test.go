package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestNestedReferencesAreRefused tries, as customer-a, to make the upstream use objects of the
// operator's upstream account that no tenant created through the gateway (conversations, items,
// prompts, files, vector stores, containers, storage objects), nested in responses, chat,
// messages and generateContent bodies and spelled so that a decoder folding case would read
// them, or fetch a media URL in the operator's network. None reaches the upstream; a body without
// references still passes.
func TestNestedReferencesAreRefused(t *testing.T) {
	env := startTenancyGateway(t)
	const key = "mg-customer-a"
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/responses", `{"model":"gpt-4o-mini","input":"hi","conversation":{"id":"conv_operator"}}`, "conversation.id"},
		{"/v1/responses", `{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"msg_operator"}]}`, "input[0].id"},
		{"/v1/responses", `{"model":"gpt-4o-mini","prompt":{"id":"pmpt_operator"}}`, "prompt.id"},
		{"/v1/responses", `{"model":"gpt-4o-mini","input":[{"role":"user","content":[{"type":"input_file","File_Id":"file-operator"}]}]}`, "input[0].content[0].File_Id"},
		{"/v1/responses", `{"model":"gpt-4o-mini","input":"q","tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]}`, "tools[0].vector_store_ids[0]"},
		{"/v1/responses", `{"model":"gpt-4o-mini","input":"q","tools":[{"type":"code_interpreter","container":"cntr_operator"}]}`, "tools[0].container"},
		{"/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"file","file":{"file\u005fid":"file-operator"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://127.0.0.1:2019/config/"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"/v1beta/models/gpt-4o-mini:generateContent", `{"contents":[{"parts":[{"fileData":{"fileUri":"gs://operator-bucket/private.pdf"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"/v1/messages", `{"model":"gpt-4o-mini","max_tokens":8,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file-operator"}}]}]}`, "messages[0].content[0].source.file_id"},
	} {
		r := call(t, "POST", env.base+tc.path, key, tc.body)
		if e := r.apiError(t); r.status != 400 || e.param != tc.param || e.code != "invalid_request_body" {
			t.Errorf("%s %s = %d %s, want 400 naming %s", tc.path, tc.body, r.status, r.body, tc.param)
		}
	}
	if _, calls := env.openai.seen(); len(calls) != 0 {
		t.Fatalf("refused bodies reached the upstream: %v", calls)
	}
	if r := call(t, "POST", env.base+"/v1/responses", key, `{"model":"gpt-4o-mini","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]}`); r.status != 200 {
		t.Fatalf("a body without references = %d %s", r.status, r.body)
	}
}

// TestCreateContentIsBounded sends video task creates with more content items than any client
// needs, and with two draft_task items: each is a 400 in the task shape, and neither reaches the
// upstream.
func TestCreateContentIsBounded(t *testing.T) {
	env := startTenancyGateway(t)
	text := `{"type":"text","text":"a cat"}`
	draft := func(id string) string { return `{"type":"draft_task","draft_task":{"id":"` + id + `"}}` }
	items := strings.TrimSuffix(strings.Repeat(text+",", 65), ",")
	for _, tc := range []struct{ content, message string }{
		{items, "at most 64"},
		{text + "," + draft("cgt-1") + "," + draft("cgt-2"), "at most one draft task"},
	} {
		r := call(t, "POST", env.base+"/api/v3/contents/generations/tasks", "mg-customer-a",
			`{"model":"doubao-seedance-1-0-lite-t2v-250428","content":[`+tc.content+`]}`)
		if r.status != 400 || r.json(t)["code"] != "invalid_request" || !strings.Contains(r.field("message"), tc.message) {
			t.Errorf("create = %d %s, want 400 invalid_request saying %q", r.status, r.body, tc.message)
		}
	}
	if _, calls := env.ark.seen(); len(calls) != 0 {
		t.Fatalf("refused creates reached the upstream: %v", calls)
	}
}

// TestFoldedMultipartHeaderIsRefused sends an upload whose model part's header is folded onto
// a second line, which Go joins and other parsers may not: a 400, and nothing is forwarded.
func TestFoldedMultipartHeaderIsRefused(t *testing.T) {
	env := startTenancyGateway(t)
	body := "--x\r\nContent-Disposition: form-data;\r\n name=\"model\"\r\n\r\nwhisper-1\r\n" +
		"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF\r\n--x--\r\n"
	req, err := http.NewRequest("POST", env.base+"/v1/audio/transcriptions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer mg-customer-a")
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	r := do(t, req)
	if e, _ := r.json(t)["error"].(map[string]any); r.status != 400 || !strings.Contains(fmt.Sprint(e["message"]), "folded") {
		t.Fatalf("folded upload = %d %s", r.status, r.body)
	}
	if _, calls := env.openai.seen(); len(calls) != 0 {
		t.Fatalf("the upload reached the upstream: %v", calls)
	}
}
