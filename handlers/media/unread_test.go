package media

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestLooksLikeURL(t *testing.T) {
	for s, want := range map[string]bool{
		"https://example.com/a.png":         true,
		"HTTP://10.0.0.1/":                  true,
		"http:10.0.0.1/":                    true, // browsers read it as http://10.0.0.1/
		"http:\\\\10.0.0.1\\":               true,
		"  https://example.com/":            true,
		"\thttp://10.0.0.1/":                true,
		"ht\ttp://10.0.0.1/":                true, // URL readers drop tabs and line breaks
		"ht\ufefftp://10.0.0.1/":            true, // and invisible characters may be dropped too
		"ht\ufffdtp://10.0.0.1/":            true, // as decoders drop bytes that are not UTF-8
		"//169.254.169.254/latest/":         true,
		"\\\\10.0.0.1\\share":               true,
		"data:image/png;base64,AAAA":        true,
		"DATA:text/plain,x":                 true,
		"file:///etc/passwd":                true,
		"file:/etc/passwd":                  true,
		"s3://bucket/key":                   true,
		"gs:bucket/key":                     true,
		"gopher://127.0.0.1:6379/_x":        true,
		"custom+scheme://host/x":            true,
		"x-private:/path":                   true,
		"":                                  false,
		"a cat surfing":                     false,
		"see https://example.com/x":         false,
		"user:1234":                         false,
		"urn:uuid:6e8bc430-9c3a-11d9-9669":  false,
		"16:9":                              false,
		"C:\\photo.png":                     false,
		"c:/photo.png":                      false,
		"note : /x":                         false,
		"/tmp/a.png":                        false,
		"reference_image":                   false,
		"a/b":                               false,
		"127.0.0.1/x.png":                   true, // host references without a scheme
		"localhost:8080/x.png":              true,
		"LOCALHOST/x":                       true,
		"10.0.0.7:80":                       true,
		"[::1]/a.png":                       true,
		"cdn.example.com/a.png":             true,
		"admin@10.0.0.1/x":                  true,
		"１２７.０.０.１/x":                       true,
		"2024/01/01":                        false,
		"models/gemini-1.5-pro":             false,
		"gpt-4.1:latest":                    false,
		"example.com":                       false,
		"photo.png":                         false,
		"bob@example.com":                   false,
		"12:30:00":                          false,
		"v1.2":                              false,
		strings.Repeat("x", 10000) + "://y": true,
	} {
		if got := LooksLikeURL(s); got != want {
			t.Errorf("LooksLikeURL(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestUnreadCheck(t *testing.T) {
	for _, tc := range []struct {
		name, value, param string // param "" means accepted
	}{
		{"public URL", `"https://cdn.example.com/a.png"`, ""},
		{"public URLs at depth", `{"a":[{"b":"https://cdn.example.com/a.png"},"http://203.0.114.7/x"]}`, ""},
		{"text mentioning a URL", `{"note":"see http://10.0.0.1/ for details"}`, ""},
		{"numbers, booleans, null, keys", `{"http://10.0.0.1/":[1,true,null,{}]}`, ""},
		{"escaped public URL", `"https:\/\/cdn.example.com\/a.png"`, ""},
		{"metadata address", `"http://169.254.169.254/latest/meta-data/"`, "f"},
		{"private address in an array", `["https://cdn.example.com/a.png","http://10.0.0.1/"]`, "f[1]"},
		{"localhost at depth", `{"a":{"b":[{"c":"http://localhost:8080/x"}]}}`, "f.a.b[0].c"},
		{"loopback in another notation", `{"u":"http://0x7f.1/"}`, "f.u"},
		{"presigned S3", `{"src":"https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&X-Amz-Credential=x"}`, "f.src"},
		{"presigned GCS", `[[{"src":"https://storage.googleapis.com/b/k?X-Goog-Signature=abc"}]]`, "f[0][0].src"},
		{"data URL", `"data:image/png;base64,AAAA"`, "f"},
		{"file URL", `"file:///etc/passwd"`, "f"},
		{"storage URL", `"s3://bucket/key"`, "f"},
		{"scheme-relative", `"//169.254.169.254/"`, "f"},
		{"without slashes", `"http:169.254.169.254"`, "f"},
		{"escaped", `"http\u003a//10.0.0.1/"`, "f"},
		{"tab inside the scheme", `"ht\ttp://10.0.0.1/"`, "f"},
		{"leading space before a public URL", `" https://cdn.example.com/a.png"`, "f"},
		{"credentials", `"https://user:pw@cdn.example.com/a.png"`, "f"},
		{"bytes that are not UTF-8", "\"ht\xfftp://10.0.0.1/\"", "f"},
		{"too deep", strings.Repeat("[", 70) + strings.Repeat("]", 70), "f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u Unread
			err := u.Check([]byte(tc.value), "f")
			if tc.param == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *FieldError
			if !errors.As(err, &e) || e.Param != tc.param {
				t.Fatalf("err = %v, want a FieldError at %s", err, tc.param)
			}
		})
	}
}

// The URLs of one body are counted across its fields.
func TestUnreadBound(t *testing.T) {
	var u Unread
	for i := range MaxUnreadURLs {
		if err := u.Check(fmt.Appendf(nil, `"https://cdn.example.com/%d.png"`, i), "f"); err != nil {
			t.Fatalf("URL %d refused: %v", i, err)
		}
	}
	var e *FieldError
	if err := u.Check([]byte(`{"x":"https://cdn.example.com/last.png"}`), "g"); !errors.As(err, &e) || e.Param != "g.x" {
		t.Fatalf("URL %d: err = %v, want a FieldError at g.x", MaxUnreadURLs+1, err)
	}
}

func BenchmarkUnreadCheck(b *testing.B) {
	value := []byte(`{"style":"watercolor","refs":[{"src":"https://cdn.example.com/a.png","weight":0.5}],"note":"soft light"}`)
	b.ReportAllocs()
	for b.Loop() {
		var u Unread
		if err := u.Check(value, "extra"); err != nil {
			b.Fatal(err)
		}
	}
}

// Check never panics, and a refusal always names a path under the field it was given.
func FuzzUnreadCheck(f *testing.F) {
	for _, s := range []string{`"http://10.0.0.1/"`, `{"a":["https://cdn.example.com/a.png",{"b":"//x"}]}`, `[1,true,null]`, `"ht\ttp:x"`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		var u Unread
		err := u.Check(value, "f")
		var e *FieldError
		if err != nil && (!errors.As(err, &e) || !strings.HasPrefix(e.Param, "f")) {
			t.Fatalf("Check(%q) = %v", value, err)
		}
	})
}
