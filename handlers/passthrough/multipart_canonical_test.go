package passthrough

import (
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// A part that cannot be re-encoded plainly is refused; an accepted body is forwarded in the
// canonical form, which Go reads back as the same parts, without the headers it drops.
func TestMultipartCanonicalForm(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	model := "Content-Disposition: form-data; name=\"model\"\r\n\r\nwhisper"
	for _, tc := range []struct {
		name string
		part string
		ok   bool
	}{
		{"plain file", "Content-Disposition: form-data; name=\"file\"; filename=\"a b.wav\"\r\nContent-Type: Audio/WAV; Rate=8000\r\nX-Extra: dropped\r\n\r\nRIFF", true},
		{"UTF-8 filename", "Content-Disposition: form-data; name=\"file\"; filename=\"café.wav\"\r\n\r\nRIFF", true},
		{"RFC 2231 filename", "Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''a%20b.wav\r\n\r\nRIFF", true},
		{"quote in filename", "Content-Disposition: form-data; name=\"file\"; filename=\"a\\\"b.wav\"\r\n\r\nRIFF", false},
		{"backslash in name", "Content-Disposition: form-data; name=\"a\\\\b\"\r\n\r\nx", false},
		{"not form-data", "Content-Disposition: attachment; name=\"file\"\r\n\r\nRIFF", false},
		{"no name", "Content-Disposition: form-data; filename=\"a.wav\"\r\n\r\nRIFF", false},
		{"no disposition", "Content-Type: audio/wav\r\n\r\nRIFF", false},
		{"base64 file", "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Transfer-Encoding: base64\r\n\r\nUklGRg==", false},
		{"two types", "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\nContent-Type: text/html\r\n\r\nRIFF", false},
	} {
		ct, body := multipartBody(tc.part, model)
		r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		if !tc.ok {
			wantError(t, err, 400, "invalid_request_body")
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		forwarded, _ := io.ReadAll(r.Body)
		route.Done()
		if strings.Contains(string(forwarded), "X-Extra") || strings.Contains(string(forwarded), "--x\r\n") ||
			strings.Contains(string(forwarded), "filename*") {
			t.Errorf("%s: forwarded %q, want the canonical form", tc.name, forwarded)
		}
		mr := multipart.NewReader(strings.NewReader(string(forwarded)), forwardedBoundary(t, r))
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		content, _ := io.ReadAll(p)
		if p.FormName() != "file" || p.FileName() == "" || string(content) != "RIFF" {
			t.Errorf("%s: read back %q %q %q", tc.name, p.FormName(), p.FileName(), content)
		}
	}
}

// TestMultipartPartsReadOneWay: a part with filename="" is a text field to Go's form reader and
// a file to others; the gateway reads it as the text field (checked as one: a URL the provider
// may fetch must be public) and forwards it without the filename, so that every reader takes it
// for that field. The model part must be a text field.
func TestMultipartPartsReadOneWay(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	model := "Content-Disposition: form-data; name=\"model\"\r\n\r\nwhisper"
	send := func(parts ...string) (*http.Request, error) {
		ct, body := multipartBody(parts...)
		r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		if err == nil {
			t.Cleanup(route.Done)
		}
		return r, err
	}
	_, err := send(model, "Content-Disposition: form-data; name=\"url\"; filename=\"\"\r\n\r\nhttp://169.254.169.254/latest/meta-data/")
	if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "url" {
		t.Errorf("a metadata address in a part with filename=\"\": param %q, want url", e.Param)
	}
	r, err := send(model, "Content-Disposition: form-data; name=\"language\"; filename=\"\"\r\nContent-Type: text/plain\r\n\r\nen")
	if err != nil {
		t.Fatal(err)
	}
	forwarded, _ := io.ReadAll(r.Body)
	if strings.Contains(string(forwarded), "filename") {
		t.Errorf("forwarded %q, want the text field without a filename", forwarded)
	}
	for _, disposition := range []string{`form-data; name="model"; filename="m.txt"`, `form-data; name="model"; filename*=UTF-8''m.txt`} {
		_, err = send("Content-Disposition: " + disposition + "\r\n\r\nwhisper")
		wantError(t, err, 400, "invalid_request_body")
	}
	if _, err = send("Content-Disposition: form-data; name=\"model\"; filename=\"\"\r\n\r\nwhisper"); err != nil {
		t.Errorf("a model part with filename=\"\" (a text field): %v", err)
	}
}
