package presign

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
)

// fakeStorage signs nothing; it only records what it was asked for. (Real signing is tested
// against versitygw in the integration tests.)
type fakeStorage struct{ key, contentType string }

func (f *fakeStorage) PresignPut(_ context.Context, key, contentType string, _ time.Duration) (string, http.Header, error) {
	f.key, f.contentType = key, contentType
	return "https://s3.example.com/" + key + "?X-Amz-Signature=x", http.Header{"Content-Type": {contentType}, "Host": {"s3.example.com"}}, nil
}

func (f *fakeStorage) PublicURL(key string) string { return "https://s3.example.com/" + key }

var keyShape = regexp.MustCompile(`^up/[0-9a-f]{16}/\d{4}/\d{2}/\d{2}/[0-9a-f]{32}(\.[a-z0-9]{1,16})?$`)

func TestObjectKeysAreGenerated(t *testing.T) {
	h := &Handler{Storage: &fakeStorage{}, Prefix: "up/"}
	for filename, ext := range map[string]string{
		"photo.JPG": ".jpg", "../../etc/passwd": "", "a.tar.gz": ".gz", "noext": "", "weird.p%ng": "", "x.webm": ".webm",
	} {
		key := h.objectKey("acme", filename)
		if !keyShape.MatchString(key) || !strings.HasSuffix(key, ext) || strings.Contains(key, "acme") || strings.Contains(key, "..") {
			t.Errorf("%q -> %q", filename, key)
		}
	}
	if h.objectKey("a", "x") == h.objectKey("a", "x") {
		t.Error("two keys for the same name are equal")
	}
	if strings.Split(h.objectKey("a", "x"), "/")[1] == strings.Split(h.objectKey("b", "x"), "/")[1] {
		t.Error("accounts share a key segment")
	}
}

func TestAllowedContentTypes(t *testing.T) {
	h := &Handler{AllowedContentTypes: []string{"image/*", "video/mp4"}}
	for ct, ok := range map[string]bool{"image/png": true, "IMAGE/PNG": true, "video/mp4": true, "video/webm": false, "application/pdf": false, "image/png; q=1": true} {
		name := "a.png"
		_, _, err := h.check(Request{Filename: &name, ContentType: &ct})
		if (err == nil) != ok {
			t.Errorf("%s: err = %v", ct, err)
		}
	}
}

func FuzzPresignRequest(f *testing.F) {
	f.Add(`{"filename":"a.png","content_type":"image/png"}`)
	f.Add(`{"filename":"\u0007.png"}`)
	f.Fuzz(func(t *testing.T, body string) {
		st := &fakeStorage{}
		h := &Handler{Storage: st, Prefix: "p/"}
		r := httptest.NewRequest("POST", "/v1/upload/presign", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k", Account: "a"}))
		w := httptest.NewRecorder()
		err := h.serve(w, r)
		if err != nil {
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 && e.Status != 413 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if !keyShape.MatchString(strings.Replace(st.key, "p/", "up/", 1)) || !utf8.ValidString(st.contentType) || strings.ContainsAny(st.contentType, "\r\n") {
			t.Fatalf("accepted %q: key %q content type %q", body, st.key, st.contentType)
		}
	})
}

func TestPresignRefusesSmuggledKeys(t *testing.T) {
	for body, param := range map[string]string{
		`{"filename":"a.png","FILENAME":"b.html"}`: "filename",
		`{"Filename":"a.png"}`:                     "filename",
		`{"filename":"a.png","content_type":"image/png","Content_Type":"text/html"}`:      "content_type",
		`{"filename":"a.png","content_type":"image/png","content_type":"text/html"}`:      "content_type",
		`{"filename":"a.png","content_type":"image/png","content_typ\u0065":"text/html"}`: "content_type",
		`{"filename":"a.png","object_key":"up/acme/index.html"}`:                          "object_key",
		`{"filename":"a.png","Key":"up/acme/index.html"}`:                                 "key",
	} {
		st := &fakeStorage{}
		h := &Handler{Storage: st}
		r := httptest.NewRequest("POST", "/v1/upload/presign", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k", Account: "a"}))
		err := h.serve(httptest.NewRecorder(), r)
		var e *apierror.Error
		if !errors.As(err, &e) || e.Status != 400 || e.Param != param || !strings.Contains(e.Message, param) || st.key != "" {
			t.Errorf("%s: err = %+v, signed %q", body, err, st.key)
		}
	}
}

func TestActiveContentIsRefusedUnlessListed(t *testing.T) {
	name := "a.png"
	check := func(h *Handler, ct string) (string, error) {
		_, got, err := h.check(Request{Filename: &name, ContentType: &ct})
		return got, err
	}
	active := []string{
		"text/html", "TEXT/HTML", "text/html; charset=utf-8", "Text/Html ;charset=UTF-8", "text/html;",
		"image/svg+xml", "IMAGE/SVG+XML; charset=utf-8", "application/xhtml+xml", "text/xml", "application/xml",
		"application/javascript", "text/javascript; charset=utf-8", "application/x-javascript", "text/ecmascript",
		"text/jscript", "text/javascript1.5", "application/rss+xml", "application/mathml+xml", "text/xsl",
		// Browsers sniff these (WHATWG MIME Sniffing, "unknown MIME type"): HTML in the file runs.
		"unknown/unknown", "Application/Unknown", "*/*", "image/*", "application/*",
		// Firefox renders each part with its own type, text/html included.
		"multipart/x-mixed-replace; boundary=x",
	}
	for _, h := range []*Handler{{}, {AllowedContentTypes: []string{"image/*", "text/*", "application/*"}}} {
		for _, ct := range active {
			if got, err := check(h, ct); err == nil {
				t.Errorf("allowed %v: %q was accepted as %q", h.AllowedContentTypes, ct, got)
			}
		}
	}
	listed := &Handler{AllowedContentTypes: []string{"image/*", "Text/HTML", "image/svg+xml"}}
	for ct, want := range map[string]string{
		"text/html; charset=UTF-8": "text/html; charset=UTF-8",
		"TEXT/HTML":                "text/html",
		"image/svg+xml":            "image/svg+xml",
		"IMAGE/PNG; Q=1":           "image/png; q=1",
	} {
		if got, err := check(listed, ct); err != nil || got != want {
			t.Errorf("listed: %q -> %q, %v; want %q", ct, got, err, want)
		}
	}
	if _, err := check(listed, "application/javascript"); err == nil {
		t.Error("listed: an active type the list does not name was accepted")
	}
	if got, err := check(&Handler{}, "image/png"); err != nil || got != "image/png" {
		t.Errorf("default: image/png -> %q, %v", got, err)
	}
}

// presignBody runs a presign request through serve and returns the signed key and the error.
func presignBody(h *Handler, body string) (string, error) {
	st := &fakeStorage{}
	h.Storage = st
	r := httptest.NewRequest("POST", "/v1/upload/presign", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k", Account: "a"}))
	err := h.serve(httptest.NewRecorder(), r)
	return st.key, err
}

// A filename whose extension names active content gives its extension to the key only when the
// upload's type is that active content (listed by the operator): an image/png upload is never
// page.html, which a server that goes by the name would serve as HTML.
func TestActiveExtensionsFollowTheContentType(t *testing.T) {
	for body, ext := range map[string]string{
		`{"filename":"page.html","content_type":"image/png"}`: "",
		`{"filename":"PAGE.HTM"}`:                             "",
		`{"filename":"x.svg","content_type":"image/jpeg"}`:    "",
		`{"filename":".htaccess"}`:                            "",
		`{"filename":"app.js","content_type":"video/mp4"}`:    "",
		`{"filename":"a.png","content_type":"image/png"}`:     ".png",
		`{"filename":"clip.mp4","content_type":"video/mp4"}`:  ".mp4",
		`{"filename":"page.html","content_type":"text/html"}`: ".html",
		`{"filename":"d.svg","content_type":"image/svg+xml"}`: ".svg",
	} {
		h := &Handler{AllowedContentTypes: []string{"image/*", "video/*", "application/octet-stream", "text/html", "image/svg+xml"}}
		key, err := presignBody(h, body)
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if got := path.Ext(key); got != ext {
			t.Errorf("%s: key %q has extension %q, want %q", body, key, got, ext)
		}
	}
}

// A filename that is not valid UTF-8 in the request bytes, or a lone surrogate escape, is refused,
// as the rule says (decoding would have turned either into U+FFFD).
func TestFilenameMustBeValidUTF8(t *testing.T) {
	for _, body := range []string{"{\"filename\":\"a\xff.png\"}", `{"filename":"a\ud800.png"}`} {
		key, err := presignBody(&Handler{}, body)
		var e *apierror.Error
		if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_upload_request" || e.Param != "filename" || key != "" {
			t.Fatalf("%q: err = %+v, signed %q", body, err, key)
		}
	}
	if _, err := presignBody(&Handler{}, `{"filename":"caf\u00e9 été.png"}`); err != nil {
		t.Fatalf("valid UTF-8 refused: %v", err)
	}
}

// Without allowed_content_types, only the media types of the list are signed, and a filename of
// a media extension or none.
func TestDefaultAllowsMediaOnly(t *testing.T) {
	for _, tc := range []struct{ filename, contentType, param string }{
		{"a.png", "image/png", ""},
		{"A.JPEG", "Image/JPEG; q=1", ""},
		{"clip.mov", "video/quicktime", ""},
		{"talk.wav", "audio/wav", ""},
		{"notes", "application/octet-stream", ""},
		{"mail.eml", "message/rfc822", "content_type"},
		{"a.png", "multipart/related; boundary=x", "content_type"},
		{"a.png", "application/x-httpd-php", "content_type"},
		{"a.png", "text/plain", "content_type"},
		{"page.mht", "image/png", "filename"},
		{"shell.PHP", "image/png", "filename"},
		{"a.png.php", "application/octet-stream", "filename"},
	} {
		name, ct := tc.filename, tc.contentType
		_, _, err := (&Handler{}).check(Request{Filename: &name, ContentType: &ct})
		var e *apierror.Error
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s %s refused: %v", name, ct, err)
		case tc.param != "" && (!errors.As(err, &e) || e.Status != 400 || e.Param != tc.param):
			t.Errorf("%s %s: err = %v, want 400 naming %s", name, ct, err, tc.param)
		}
	}
}
