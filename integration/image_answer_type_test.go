package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestImageAnswersAreTheGatewaysJSON: a hostile provider that types its image answers text/html
// (a page with a script, on the gateway's origin) has them typed as the gateway's own: an edit's
// answer and an image task's query answer are application/json with nosniff, and a query answer
// that is not a JSON object at all is 502 invalid_response, as the video task API answers one.
// Before, both passed the provider's Content-Type on, and the query its HTML body too.
func TestImageAnswersAreTheGatewaysJSON(t *testing.T) {
	const page = `<html><script>alert(document.cookie)</script></html>`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short local body
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/imgtask_page"):
			io.WriteString(w, page)
		case r.Method == http.MethodGet:
			io.WriteString(w, `{"id":"imgtask_html","status":"succeeded","data":[{"url":"https://cdn.example.com/t.png"}],"note":"`+strings.ReplaceAll(page, `"`, `\"`)+`"}`)
		case strings.Contains(string(body), "then a page"):
			io.WriteString(w, `{"id":"imgtask_page","status":"queued"}`)
		case strings.Contains(string(body), "as a task"):
			io.WriteString(w, `{"id":"imgtask_html","status":"queued"}`)
		default:
			io.WriteString(w, `{"created":1,"data":[{"b64_json":"iVBORw0KGgo="}],"note":"`+page+`"}`)
		}
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, imageEditSlotsCaddyfile, map[string]string{"upstream_url": provider.URL})
	edit := func(prompt string) response {
		return call(t, http.MethodPost, base+"/v1/images/edits", "mg-edit-slots",
			`{"model":"edit-async","prompt":"`+prompt+`","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`)
	}
	ownJSON := func(what string, r response) {
		t.Helper()
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s = %d, Content-Type %q, X-Content-Type-Options %q; want 200 application/json, nosniff (%s)",
				what, r.status, r.header.Get("Content-Type"), r.header.Get("X-Content-Type-Options"), r.body)
		}
	}
	ownJSON("an edit", edit("make it blue"))
	r := edit("make it blue as a task")
	ownJSON("an edit as a task", r)
	if r.field("id") != "imgtask_html" {
		t.Fatalf("edit as a task = %s, want the task imgtask_html", r.body)
	}
	ownJSON("the task's query", call(t, http.MethodGet, base+"/v1/images/tasks/imgtask_html", "mg-edit-slots", nil))

	// A task whose provider answers its query with a page: the edit made it, the query refuses.
	r = edit("make it blue as a task, then a page")
	if r.status != http.StatusOK || r.field("id") != "imgtask_page" {
		t.Fatalf("edit = %d %s, want the task imgtask_page", r.status, r.body)
	}
	r = call(t, http.MethodGet, base+"/v1/images/tasks/imgtask_page", "mg-edit-slots", nil)
	if r.status != http.StatusBadGateway || !strings.Contains(string(r.body), `"invalid_response"`) ||
		strings.Contains(string(r.body), "<script>") || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("query of a task answered with a page = %d %q %s; want 502 invalid_response, JSON", r.status, r.header.Get("Content-Type"), r.body)
	}
}
