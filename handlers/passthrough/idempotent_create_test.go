package passthrough

import (
	"bytes"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// RequestHash is what a retry of an idempotent create must match: a video create's JSON body
// counts without its insignificant whitespace (an SDK ends its body with a newline), a form by
// its parts whatever its boundary; another body, another path or another part differs. A create
// that sends no key, and a request that makes no asynchronous object, have none.
func TestIdempotentCreateRequestHash(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	hashOf := func(path, contentType, body string, keys ...string) string {
		t.Helper()
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		for _, k := range keys {
			r.Header.Add("Idempotency-Key", k)
		}
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatalf("%s %s: %v", path, body, err)
		}
		route.Done()
		return route.RequestHash
	}
	form := func(boundary, prompt string) (string, string) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		if err := mw.SetBoundary(boundary); err != nil {
			t.Fatal(err)
		}
		mw.WriteField("model", "doubao")
		mw.WriteField("prompt", prompt)
		mw.WriteField("seconds", "4")
		mw.Close()
		return mw.FormDataContentType(), b.String()
	}
	const js = "application/json"
	video := `{"model":"doubao","prompt":"a lighthouse","seconds":"4"}`
	first := hashOf("/v1/videos", js, video, "k")
	if first == "" {
		t.Fatal("a video create with one key has no request hash")
	}
	if again := hashOf("/v1/videos", js, "{\n  \"model\": \"doubao\", \"prompt\": \"a lighthouse\", \"seconds\": \"4\"\n}\n", "k"); again != first {
		t.Fatal("the same JSON with other whitespace hashes otherwise")
	}
	if other := hashOf("/v1/videos", js, `{"model":"doubao","prompt":"a harbour","seconds":"4"}`, "k"); other == first {
		t.Fatal("another prompt hashes the same")
	}
	if other := hashOf("/v1/video/generations", js, video, "k"); other == "" || other == first {
		t.Fatalf("another endpoint's create hashes %q", other)
	}
	ct1, f1 := form("boundary-one", "a lighthouse")
	ct2, f2 := form("another-boundary-two", "a lighthouse")
	ct3, f3 := form("boundary-three", "a harbour")
	h1, h2, h3 := hashOf("/v1/videos", ct1, f1, "k"), hashOf("/v1/videos", ct2, f2, "k"), hashOf("/v1/videos", ct3, f3, "k")
	if h1 == "" || h1 != h2 || h1 == h3 || h1 == first {
		t.Fatalf("forms hash %q, %q (another boundary) and %q (another prompt); want the first two alike, the third not", h1, h2, h3)
	}
	for _, c := range []struct {
		name, path, body string
		keys             []string
	}{
		{"no key", "/v1/videos", video, nil},
		{"a chat", "/v1/chat/completions", `{"model":"doubao"}`, []string{"k"}},
	} {
		if h := hashOf(c.path, js, c.body, c.keys...); h != "" {
			t.Errorf("%s: request hash %q, want none", c.name, h)
		}
	}
}
