package integration

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// TestWrongContentTypeSaysWhatIsAccepted: a body of another type than JSON gets, on the image
// edit, the presign and the task create endpoints, one wording in each endpoint's shape: what is
// accepted and what was received (the media type without its parameters), param Content-Type.
// Only a multipart image edit is told about multipart, with where files go instead; before, every
// image edit's refusal spoke of multipart bodies, text/plain's too.
func TestWrongContentTypeSaysWhatIsAccepted(t *testing.T) {
	base, _ := startSimGateway(t, frontdoorCaddyfile, nil)
	const key = "mg-frontdoor-key"
	post := func(path, contentType string, body []byte) (status int, message, code, param string) {
		req, err := http.NewRequest("POST", base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		r := do(t, req)
		m := r.json(t)
		if e, ok := m["error"].(map[string]any); ok {
			m = e // the OpenAI shape; the task API's is flat
		}
		message, _ = m["message"].(string)
		code, _ = m["code"].(string)
		param, _ = m["param"].(string)
		return r.status, message, code, param
	}
	edit := []byte(`{"model":"sim-image","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`)
	for _, tc := range []struct{ path, code string }{
		{"/v1/images/edits", "invalid_request_body"},
		{"/v1/upload/presign", "invalid_request_body"},
		{"/api/v3/contents/generations/tasks", "invalid_request"},
	} {
		for ct, got := range map[string]string{"text/plain; charset=utf-8": "text/plain", "": "none", "application/xml": "application/xml"} {
			status, message, code, param := post(tc.path, ct, edit)
			want := "Content-Type must be application/json; got " + got
			if status != 400 || message != want || code != tc.code || (param != "Content-Type" && tc.code != "invalid_request") {
				t.Errorf("POST %s as %q = %d %q %q %q; want 400 %q", tc.path, ct, status, message, code, param, want)
			}
		}
	}

	// A JSON body in another charset than UTF-8 is a wrong Content-Type too, on every JSON
	// endpoint, pass-through included, with the charset received; UTF-8 and none are taken.
	// Before, only pass-through refused it (in its own words); the others read latin1 as UTF-8.
	const note = " (a JSON body is UTF-8: charset may be utf-8 or left out)"
	for _, tc := range []struct{ path, code string }{
		{"/v1/images/edits", "invalid_request_body"},
		{"/v1/upload/presign", "invalid_request_body"},
		{"/api/v3/contents/generations/tasks", "invalid_request"},
		{"/v1/chat/completions", "invalid_request_body"},
	} {
		for ct, got := range map[string]string{
			"application/json; charset=latin1":        "application/json; charset=latin1",
			"application/json;charset=\"ISO-8859-1\"": "application/json; charset=iso-8859-1",
			"Application/JSON; Charset=UTF-16":        "application/json; charset=utf-16",
		} {
			status, message, code, param := post(tc.path, ct, edit)
			want := "Content-Type must be application/json; got " + got + note
			if status != 400 || message != want || code != tc.code || (param != "Content-Type" && tc.code != "invalid_request") {
				t.Errorf("POST %s as %q = %d %q %q %q; want 400 %q", tc.path, ct, status, message, code, param, want)
			}
		}
		for _, ct := range []string{"application/json; charset=utf-8", "application/json; charset=\"UTF-8\""} {
			if status, message, _, _ := post(tc.path, ct, edit); strings.HasPrefix(message, "Content-Type") {
				t.Errorf("POST %s as %q = %d %q; UTF-8 is JSON's charset", tc.path, ct, status, message)
			}
		}
	}

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("model", "sim-image") // a bytes.Buffer takes every write
	_ = mw.WriteField("prompt", "blue")
	_ = mw.Close()
	status, message, code, _ := post("/v1/images/edits", mw.FormDataContentType(), form.Bytes())
	if status != 400 || code != "invalid_request_body" ||
		!strings.HasPrefix(message, "Content-Type must be application/json; got multipart/form-data (file bodies are not accepted") ||
		!strings.Contains(message, "POST /v1/upload/presign") || strings.Contains(message, mw.Boundary()) {
		t.Errorf("a multipart image edit = %d %q %q", status, message, code)
	}
	status, message, _, _ = post("/v1/upload/presign", mw.FormDataContentType(), form.Bytes())
	if status != 400 || message != "Content-Type must be application/json; got multipart/form-data" {
		t.Errorf("a multipart presign = %d %q", status, message)
	}
}
