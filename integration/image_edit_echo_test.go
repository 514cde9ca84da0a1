package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestImageEditAnswersNeverQuoteTheCredential: an image edit's successful answer, and an image
// task's query answer, are the gateway's own as a video task's are: a provider that quotes the
// operator's key in one (a result URL that carries it as written or percent-encoded, a debug
// member; an event stream's text) has it replaced before the client sees the answer, whose
// images stay as made, and a task id that quotes it is one the gateway cannot hand out (502).
// Before, a 2xx answer of image edits was passed on as it came, key and all.
func TestImageEditAnswersNeverQuoteTheCredential(t *testing.T) {
	const key = "upstream-key" // imageEditSlotsCaddyfile's api_key: no usual key prefix
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short local body
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet:
			io.WriteString(w, `{"id":"imgtask_echo","status":"succeeded","data":[{"url":"https://cdn.example.com/t.png?api_key=upstream%2Dkey"}],"debug":"sent \u0075pstream-key"}`)
		case strings.Contains(string(body), "as a stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: image_edit.completed\ndata: {\"type\":\"image_edit.completed\",\"b64_json\":\"QUJD\",\"debug\":\"key=upstream%2Dkey\"}\n\n")
		case strings.Contains(string(body), "key in its id"):
			io.WriteString(w, `{"id":"imgtask_`+key+`","status":"queued"}`)
		case strings.Contains(string(body), "as a task"):
			io.WriteString(w, `{"id":"imgtask_echo","status":"queued","debug":"Authorization: Bearer `+key+`"}`)
		default:
			io.WriteString(w, `{"created":1,"data":[{"url":"https://cdn.example.com/out.png?key=`+key+`"},{"b64_json":"iVBORw0KGgo="}],"debug":"`+key+`"}`)
		}
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, imageEditSlotsCaddyfile, map[string]string{"upstream_url": provider.URL})

	edit := func(prompt string) response {
		return call(t, http.MethodPost, base+"/v1/images/edits", "mg-edit-slots",
			`{"model":"edit-async","prompt":"`+prompt+`","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`)
	}
	quotes := func(r response) bool {
		return strings.Contains(string(r.body), "pstream-key") || strings.Contains(strings.ToLower(string(r.body)), "pstream%2dkey")
	}
	r := edit("make it blue")
	if r.status != http.StatusOK || quotes(r) || !strings.Contains(string(r.body), "iVBORw0KGgo=") ||
		!strings.Contains(string(r.body), "https://cdn.example.com/out.png?key=") {
		t.Errorf("edit = %d %s, want the images without the operator's key", r.status, r.body)
	}
	r = edit("make it blue as a stream")
	if r.status != http.StatusOK || quotes(r) || !strings.Contains(string(r.body), `"b64_json":"QUJD"`) {
		t.Errorf("streamed edit = %d %s, want the stream without the operator's key", r.status, r.body)
	}
	r = edit("make it blue, the key in its id")
	if r.status != http.StatusBadGateway || quotes(r) {
		t.Errorf("edit answered with a task id that quotes the key = %d %s, want 502 without the key", r.status, r.body)
	}
	r = edit("make it blue as a task")
	if r.status != http.StatusOK || quotes(r) || r.field("id") != "imgtask_echo" {
		t.Errorf("edit as a task = %d %s, want the task without the operator's key", r.status, r.body)
	}
	r = call(t, http.MethodGet, base+"/v1/images/tasks/imgtask_echo", "mg-edit-slots", nil)
	if r.status != http.StatusOK || quotes(r) || !strings.Contains(string(r.body), "https://cdn.example.com/t.png") {
		t.Errorf("task query = %d %s, want the task without the operator's key", r.status, r.body)
	}
}
