package videotask

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestVideosFrontRefusesPrivateAddresses: the front's input_reference, in JSON and in a form, is
// held to the task API's URL rules: internal addresses in any spelling, hosts without a scheme,
// other schemes, credentials and presigned URLs are a 400 naming the field, and nothing reaches
// the upstream. A callback_url without an http(s) scheme, or with credentials, is refused too;
// its address is checked when a delivery dials it (see the callbacks package).
func TestVideosFrontRefusesPrivateAddresses(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	for _, field := range []string{"input_reference", "callback_url"} {
		for _, addr := range []string{
			"http://127.0.0.1/a.png", "http://127.1/a.png", "http://0x7f.1/a.png", "http://[::ffff:7f00:1]/a.png",
			"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/a.png", "http://localhost/a.png",
			"img.example/a.png", "//img.example/a.png", "file:///etc/passwd", "gopher://img.example/a",
			"https://user:pass@img.example/a.png", "https://s3.example/a.png?X-Amz-Signature=0&X-Amz-Credential=AKIA",
		} {
			if field == "callback_url" && strings.HasPrefix(addr, "http") && !strings.Contains(addr, "@") {
				continue // callbacks check the address they dial, when they dial it (a name resolves then)
			}
			body, err := json.Marshal(map[string]string{"model": "m", "prompt": "p", field: addr})
			if err != nil {
				t.Fatal(err)
			}
			w := serveFront(f, "acme", "POST", "/v1/videos", "application/json", strings.NewReader(string(body)))
			if w.Code != 400 || !strings.Contains(w.Body.String(), `"param":"`+field+`"`) {
				t.Errorf("JSON %s %q = %d %s; want a 400 naming it", field, addr, w.Code, w.Body)
			}
			ct, form := multipartBody(t, [][2]string{{"model", "m"}, {"prompt", "p"}, {field, addr}}, false)
			if w := serveFront(f, "acme", "POST", "/v1/videos", ct, form); w.Code != 400 || !strings.Contains(w.Body.String(), `"param":"`+field+`"`) {
				t.Errorf("form %s %q = %d %s; want a 400 naming it", field, addr, w.Code, w.Body)
			}
		}
	}
	if len(up.creates) != 0 {
		t.Fatalf("refused creates reached the upstream: %v", up.creates)
	}
}

// TestVideosFrontFormTricks: a form that names its model twice (also around a file), sends a
// field past the body bound, or hides its file before its model, is refused before anything
// reaches the upstream.
func TestVideosFrontFormTricks(t *testing.T) {
	f, up := newFront(t, succeededAnswer)
	f.Tasks.MaxBodyBytes = 4 << 10
	for name, tc := range map[string]struct {
		fields [][2]string
		file   bool
		status int
	}{
		"model twice":       {[][2]string{{"model", "m"}, {"prompt", "p"}, {"model", "other"}}, false, 400},
		"model twice, file": {[][2]string{{"model", "m"}, {"model", "other"}, {"prompt", "p"}}, true, 400},
		"empty model":       {[][2]string{{"model", ""}, {"prompt", "p"}}, false, 400},
		"huge prompt":       {[][2]string{{"model", "m"}, {"prompt", strings.Repeat("a", 8<<10)}}, false, 413},
		"unknown field":     {[][2]string{{"model", "m"}, {"prompt", "p"}, {"Model", "other"}}, false, 400},
	} {
		ct, form := multipartBody(t, tc.fields, tc.file)
		if w := serveFront(f, "acme", "POST", "/v1/videos", ct, form); w.Code != tc.status {
			t.Errorf("%s = %d %s; want %d", name, w.Code, w.Body, tc.status)
		}
	}
	if len(up.creates) != 0 {
		t.Fatalf("refused forms reached the upstream: %v", up.creates)
	}
}
