package passthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// The providers of the media generation endpoints fetch the references they are given, under
// names of their own: every URL in such a body must be one they may fetch, as in a chat. The
// other JSON capabilities check their media URL members.
func TestFetchedURLsMustBePublic(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct {
		path, body, param string // param "" means accepted
	}{
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"http://169.254.169.254/latest/meta-data/"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":["https://cdn.example.com/a.png","http://10.0.0.7/b.png"]}`, "image[1]"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"https://user:pw@cdn.example.com/a.png"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"HTTP:\/\/localhost\/a.png"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"file:///etc/passwd"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"https://cdn.example.com/a.png"}`, ""},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"data:image/png;base64,iVBORw0KGgo="}`, ""},
		{"/v1/images/generations", `{"model":"doubao","prompt":"http://localhost/","size":"1024x1024"}`, ""},
		{"/v1/video/generations", `{"model":"doubao","prompt":"a cat","callback_url":"http://127.0.0.1:9000/hook"}`, "callback_url"},
		{"/v1/video/generations", `{"model":"doubao","content":[{"type":"text","text":"http://127.0.0.1/"},{"type":"image_url","image_url":{"url":"http://[::1]/a.png"}}]}`, "content[1].image_url.url"},
		{"/v1/video/generations", `{"model":"doubao","metadata":{"ratio":"16:9"},"first_frame_image":"https://cdn.example.com/f.png"}`, ""},
		{"/v1/videos", `{"model":"doubao","prompt":"a cat","input_reference":"http://192.168.1.1/ref.png"}`, "input_reference"},
		{"/v1/embeddings", `{"model":"doubao","input":[{"type":"image_url","image_url":{"url":"http://10.0.0.1/a.png"}}]}`, "input[0].image_url.url"},
		{"/v1/embeddings", `{"model":"doubao","input":["http://localhost/ is text to embed"]}`, ""},
		{"/v1/rerank", `{"model":"doubao","query":"q","documents":[{"image_url":"http://127.0.0.1/x.png"}]}`, "documents[0].image_url"},
		// Host references without a scheme, and keys that only look like a free text member.
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"127.0.0.1/x.png"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","image":"localhost:8080/x.png"}`, "image"},
		{"/v1/images/generations", `{"model":"doubao","Prompt":"http://127.0.0.1/x.png"}`, "Prompt"},
		{"/v1/video/generations", `{"model":"doubao","prompt":"2024/01/01 at 16:9","version":"v1.2"}`, ""},
		// Chat, embeddings, rerank and speech: every member but free text.
		{"/v1/embeddings", `{"model":"doubao","input":[{"image":"http://127.0.0.1/x.png"}]}`, "input[0].image"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"url":"http://127.0.0.1/a.wav"}}]}]}`, "messages[0].content[0].input_audio.url"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"fallback_url":"10.0.0.1/a.png"}]}]}`, "messages[0].content[0].fallback_url"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"fetch http://127.0.0.1/ please"},{"role":"user","content":[{"type":"text","text":"localhost:8080/x"}]}]}`, ""},
		{"/v1/audio/speech", `{"model":"doubao","input":"http://localhost/","voice":"alloy"}`, ""},
		// Short strings (read for a colon or slash first) and long ones (looked up first), each
		// in a free text member and out of one.
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"http://10.0.0.1/a-long-enough-path-to-pass-32-bytes.png"}]}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"x","image":"http://10.0.0.1/a-long-enough-path-to-pass-32-bytes.png"}]}`, "messages[0].image"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"http://10.0.0.1/"}]}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"x","image":"http://10.0.0.1/"}]}`, "messages[0].image"},
	} {
		checkRoute(t, rt, tc.path, tc.body, tc.param)
	}
}

func TestFetchedURLsAreBounded(t *testing.T) {
	var urls []string
	for i := range MaxFetchedURLs + 1 {
		urls = append(urls, fmt.Sprintf(`"https://cdn.example.com/%d.png"`, i))
	}
	body := `{"model":"doubao","image":[` + strings.Join(urls, ",") + `]}`
	err := checkFetchedURLs([]byte(body), mediaFreeText, mediaNotFetched)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Param != fmt.Sprintf("image[%d]", MaxFetchedURLs) {
		t.Fatalf("err = %v", err)
	}
	if err := checkFetchedURLs([]byte(`{"model":"doubao","image":[`+strings.Join(urls[:MaxFetchedURLs], ",")+`]}`), mediaFreeText, mediaNotFetched); err != nil {
		t.Fatal(err)
	}
}

// A text part of a multipart body is checked as a JSON string member is: some providers take the
// audio to transcribe (url) or a video's reference as a URL form field. Files are not read.
func TestMultipartURLFieldsMustBePublic(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	field := func(name, value string) string {
		return "Content-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value
	}
	model := field("model", "whisper")
	file := "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nhttp://127.0.0.1/"
	for _, tc := range []struct {
		name  string
		parts []string
		param string
	}{
		{"private url field", []string{model, field("url", "http://10.0.0.8/a.wav")}, "url"},
		{"metadata address after a file", []string{file, model, field("input_reference", "http://169.254.169.254/")}, "input_reference"},
		{"long value, private host", []string{model, field("url", "http://127.0.0.1/"+strings.Repeat("a", 10000))}, "url"},
		{"private url after 5000 spaces", []string{model, field("url", strings.Repeat(" ", 5000)+"http://10.0.0.8/a.wav")}, "url"},
		{"quoted-printable text part", []string{model, "Content-Disposition: form-data; name=\"url\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nhttp=3A//10.0.0.8/a.wav"}, "url"},
		{"base64 text part", []string{model, "Content-Disposition: form-data; name=\"url\"\r\nContent-Transfer-Encoding: base64\r\n\r\naHR0cDovLzEwLjAuMC44L2Eud2F2"}, "url"},
		// Forwarded with its name as a plain filename (the canonical form): a file to every reader.
		{"file name only as filename*", []string{model, "Content-Disposition: form-data; name=\"url\"; filename*=UTF-8''a\r\n\r\nhttp://10.0.0.8/a.wav"}, ""},
		{"empty file name: a text field to Go's reader", []string{model, "Content-Disposition: form-data; name=\"url\"; filename=\"\"\r\n\r\nhttp://10.0.0.8/a.wav"}, "url"},
		{"file named with filename*, binary body", []string{model, "Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''%C3%A9.wav\r\nContent-Type: audio/wav\r\n\r\nRIFF\x00\x01WAVEfmt "}, ""},
		{"public url field", []string{model, field("url", "https://cdn.example.com/a.wav")}, ""},
		{"a file is not read", []string{file, model}, ""},
		{"a prompt is text", []string{model, field("prompt", "http://localhost/")}, ""},
		{"plain field", []string{model, field("language", "en")}, ""},
	} {
		checkForm(t, rt, "/v1/audio/transcriptions", tc.name, tc.param, tc.parts...)
	}
}

// The MCP servers a body names are called by the provider, which may be a model server in the
// operator's network: a Responses mcp tool's server_url and a Messages mcp_servers[].url.
func TestMCPServerURLsMustBePublic(t *testing.T) {
	batches, err := ParseEndpoint("POST", "/v1/messages/batches")
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: catalog(t), Extra: []Endpoint{batches}}
	for _, tc := range []struct {
		path, body, param string
	}{
		{"/v1/responses", `{"model":"doubao","input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"http://10.0.0.3:8080/sse"}]}`, "tools[0].server_url"},
		{"/v1/responses", `{"model":"doubao","input":"hi","tools":[{"type":"mcp","server_label":"x","Server_URL":"http://127.0.0.1/"}]}`, "tools[0].Server_URL"},
		{"/v1/responses", `{"model":"doubao","input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"https://mcp.example.com/sse"}]}`, ""},
		{"/v1/messages", `{"model":"doubao","max_tokens":8,"messages":[],"mcp_servers":[{"type":"url","name":"x","url":"http://169.254.169.254/"}]}`, "mcp_servers[0].url"},
		{"/v1/messages", `{"model":"doubao","max_tokens":8,"messages":[],"mcp_servers":[{"type":"url","name":"x","url":"https://mcp.example.com/"}]}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[],"tools":[{"type":"mcp","server_url":"http://localhost:9/"}]}`, "tools[0].server_url"},
		{"/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"doubao","max_tokens":8,"messages":[],"mcp_servers":[{"type":"url","name":"x","url":"http://10.0.0.1/"}]}}]}`, "requests[0].params.mcp_servers[0].url"},
	} {
		checkRoute(t, rt, tc.path, tc.body, tc.param)
	}
}

// A boundary is read the same by every parser only when it keeps to RFC 2046's characters: with
// a quoted-pair (boundary="a\"b") one parser splits at --a"b and another at --a\"b, and parts
// hidden in a file part of the first would be the second's (a model never checked).
func TestMultipartBoundaryMustBePlain(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	for boundary, ok := range map[string]bool{
		`"a\"b"`:                                false,
		`"a\\b"`:                                false,
		`"a;b"`:                                 false,
		`"a b"`:                                 false,
		`"ab "`:                                 false,
		`"` + strings.Repeat("a", 71) + `"`:     false,
		`"é"`:                                   false,
		`----WebKitFormBoundary7MA4YWxkTrZu0gW`: true,
		`"===============1234567890=="`:         true,
		`formdata-undici-0123456789`:            true,
		`"a'()+_,-./:=?b"`:                      true,
	} {
		ct := "multipart/form-data; boundary=" + boundary
		_, params, err := mime.ParseMediaType(ct)
		if err != nil {
			t.Fatalf("%s: %v", ct, err)
		}
		b := params["boundary"]
		body := "--" + b + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--" + b + "--\r\n"
		r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		if ok != (err == nil) {
			t.Errorf("boundary %s: err = %v, want accepted %v", boundary, err, ok)
		}
		if err == nil {
			route.Done()
		}
	}
}

// An operator's endpoint gets the URL checks of what it extends: an images or video(s) segment
// those of the media generation endpoints, any other those of speech or embeddings.
func TestOperatorEndpointsCheckFetchedURLs(t *testing.T) {
	var extra []Endpoint
	for _, p := range []string{"/v1/images/variations", "/api/v3/video/extend", "/v1/moderations"} {
		ep, err := ParseEndpoint("POST", p)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, ep)
	}
	rt := &Router{Catalog: catalog(t), Extra: extra}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/images/variations", `{"model":"doubao","image":"http://10.0.0.1/a.png"}`, "image"},
		{"/api/v3/video/extend", `{"model":"doubao","video":{"src":"http://[::1]/v.mp4"}}`, "video.src"},
		{"/v1/moderations", `{"model":"doubao","input":[{"type":"image_url","image_url":{"url":"http://127.0.0.1/a.png"}}]}`, "input[0].image_url.url"},
		{"/v1/moderations", `{"model":"doubao","input":"http://127.0.0.1/ is text"}`, ""},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		var e *apierror.Error
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.path, err)
		case tc.param != "" && (!errors.As(err, &e) || e.Status != 400 || e.Param != tc.param):
			t.Errorf("%s %s: err = %v, want 400 naming %s", tc.path, tc.body, err, tc.param)
		}
	}
}

// checkRoute routes a JSON POST of body to path and wants it through (param "") or refused with
// 400 naming param.
func checkRoute(t *testing.T, rt *Router, path, body, param string) {
	t.Helper()
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	var e *apierror.Error
	switch {
	case param == "" && err != nil:
		t.Errorf("%s %s: refused: %v", path, body, err)
	case param != "" && (!errors.As(err, &e) || e.Status != 400 || e.Param != param):
		t.Errorf("%s %s: err = %v, want 400 naming %s", path, body, err, param)
	}
}

// readValueHead skips leading whitespace however long, and reads the value's start across reads.
func TestReadValueHead(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"   \r\n\t", ""},
		{"abc", "abc"},
		{"  http://a/", "http://a"},
		{strings.Repeat(" ", 10) + "0123456789", "01234567"},
		{strings.Repeat(" ", 7) + "0123456789", "01234567"},
		{strings.Repeat(" ", 8) + "0123456789", "01234567"},
		{strings.Repeat(" ", 9) + "012", "012"},
	} {
		head := make([]byte, 8)
		n, err := readValueHead(iotest.OneByteReader(strings.NewReader(tc.in)), head)
		if err != nil || string(head[:n]) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, head[:n], err, tc.want)
		}
		n, err = readValueHead(strings.NewReader(tc.in), head)
		if err != nil || string(head[:n]) != tc.want {
			t.Errorf("%q (one read): got %q, %v; want %q", tc.in, head[:n], err, tc.want)
		}
	}
}

// Members that no provider fetches carry free text that may look like a host: a user id, chat
// metadata, tool definitions with JSON schema patterns, tool-call arguments, stop sequences,
// the answer's format. They pass; the same strings one step outside them, or under a key that
// differs only by case, are still checked.
func TestNotFetchedMembersPass(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct {
		path, body, param string // param "" means accepted
	}{
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"user":"team.acme.io/alice","metadata":{"page":"docs.example.com/guide","svc":"localhost:8080/health"}}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"stop":["127.0.0.1:8080/","localhost:3000/"]}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"fetch_page","description":"fetches localhost:8080/status","parameters":{"type":"object","properties":{"url":{"type":"string","pattern":"example.com/.*","default":"http://localhost:8080/","examples":["10.0.0.1:80/x"]}}}}}],"tool_choice":{"type":"function","function":{"name":"fetch_page"}}}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"fetch_page","arguments":"{\"url\":\"http://127.0.0.1:8080/\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"page","schema":{"type":"object","properties":{"link":{"type":"string","pattern":"internal.corp/.+"}}}}}}`, ""},
		{"/v1/embeddings", `{"model":"doubao","input":"hello","user":"ops.example.org/bot"}`, ""},
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","user":"team.acme.io/alice"}`, ""},
		// Still checked: media bodies' metadata, a content part's own metadata, a tool that is
		// not a function, keys that differ from an exempt one by case.
		{"/v1/images/generations", `{"model":"doubao","prompt":"a cat","metadata":{"ref":"127.0.0.1/x.png"}}`, "metadata.ref"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image","image":"https://cdn.example.com/a.png","metadata":{"url":"http://127.0.0.1/"}}]}]}`, "messages[0].content[0].metadata.url"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"mcp","server_url":"http://10.0.0.1:8080/mcp"}]}`, "tools[0].server_url"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"Metadata":{"u":"localhost:8080/x"}}`, "Metadata.u"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","Function":{"u":"http://127.0.0.1/"}}]}`, "tools[0].Function.u"},
		{"/v1/chat/completions", `{"model":"doubao","messages":[{"role":"user","content":"hi","name":"x","image":"http://127.0.0.1/"}]}`, "messages[0].image"},
	} {
		checkRoute(t, rt, tc.path, tc.body, tc.param)
	}
}

// The fields no provider fetches are the same in a multipart body as in a JSON one: a form field
// named as a JSON member (user), or by the bracket names that form encoders give nested members
// (user[x], prompt[0]), is exempt or checked as that member is; a name that differs by case is
// checked in both.
func TestMultipartFieldsFollowTheJSONRules(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir()}
	for _, tc := range []struct {
		name, value, json    string // the form field, and the same member in JSON
		jsonParam, formParam string // "" when accepted
	}{
		{"user", "team.acme.io/alice", `"user":"team.acme.io/alice"`, "", ""},
		{"user[team]", "team.acme.io/alice", `"user":{"team":"team.acme.io/alice"}`, "", ""},
		{"prompt", "http://localhost/", `"prompt":"http://localhost/"`, "", ""},
		{"prompt[0]", "http://localhost/", `"prompt":["http://localhost/"]`, "", ""},
		{"User", "10.0.0.1/x.png", `"User":"10.0.0.1/x.png"`, "User", "User"},
		{"metadata[ref]", "127.0.0.1/x.png", `"metadata":{"ref":"127.0.0.1/x.png"}`, "metadata.ref", "metadata[ref]"},
		{"input_reference", "http://169.254.169.254/", `"input_reference":"http://169.254.169.254/"`, "input_reference", "input_reference"},
		{"user]x[", "10.0.0.1/x.png", `"user]x[":"10.0.0.1/x.png"`, "user]x[", "user]x["},
		{"input_reference", "https://cdn.example.com/a.png", `"input_reference":"https://cdn.example.com/a.png"`, "", ""},
	} {
		checkRoute(t, rt, "/v1/videos", `{"model":"doubao",`+tc.json+`}`, tc.jsonParam)
		checkForm(t, rt, "/v1/videos", tc.name+"="+tc.value, tc.formParam,
			"Content-Disposition: form-data; name=\"model\"\r\n\r\ndoubao",
			"Content-Disposition: form-data; name=\""+tc.name+"\"\r\n\r\n"+tc.value)
	}
}

// checkForm routes a multipart body of parts to path and checks that it is accepted (param "") or
// refused with 400 naming param.
func checkForm(t *testing.T, rt *Router, path, what, param string, parts ...string) {
	t.Helper()
	ct, body := multipartBody(parts...)
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	r.Header.Set("Content-Type", ct)
	route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	var e *apierror.Error
	switch {
	case param == "" && err != nil:
		t.Errorf("%s: refused: %v", what, err)
	case param != "" && (!errors.As(err, &e) || e.Status != 400 || e.Param != param):
		t.Errorf("%s: err = %v, want 400 naming %s", what, err, param)
	}
	if err == nil {
		route.Done()
	}
}

// BenchmarkFetchedURLs measures the URL walk of a chat body (which plainStrings spares a plain
// one, such as the short one here): one short request, and a conversation of 20 messages (an
// object each) with an image URL in one of them:
//
//	go test ./handlers/passthrough/ -run '^$' -bench FetchedURLs -benchmem
func BenchmarkFetchedURLs(b *testing.B) {
	short := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	var msgs []string
	for i := range 20 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"message %d about the weather in Paris"}`, i))
	}
	msgs[10] = `{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}`
	long := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
	for name, body := range map[string]string{"short": short, "20_messages": long} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := checkFetchedURLs([]byte(body), dialogueFreeText, dialogueNotFetched); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPlainStrings holds plainStrings to what it stands for: a valid JSON body that it calls
// plain is one checkFetchedURLs' walk finds nothing in, under every rule of free text (none
// included: then every string is read) and members not fetched, and its hint is keyHint's for
// every endpoint's words.
func FuzzPlainStrings(f *testing.F) {
	for _, body := range []string{
		`{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`,
		`{"image":"localhost:8080/x.png"}`, `{"image":"a/b"}`, `{"image":"\/\/x"}`, `{"image":" //x"}`,
		`{"image":"\u002f/x"}`, `{"image":"é"}`, `{"a":""}`, `["x",{"y":["z"]}]`, `"http://x/"`,
		`{"image":"http://127.0.0.1/"}`, `{"image":"127.0.0.1"}`, `{"n":1.5,"b":true,"x":null}`,
		`{"audio":{"id":"a"}}`, `{"AUDIO":1}`, `{"Url":1}`, `{"image_URL":"x"}`, `{"FILE_ID":"f"}`, `{"x_":1}`,
		`{"vector_store_ids":[]}`, `{"xſ":1}`, `{"ſ":1}`, `{"a":"\u0061udio"}`, `{"":"url"}`, `["audio"]`,
		strings.Repeat("[", jsonkeys.MaxWalkDepth) + strings.Repeat("]", jsonkeys.MaxWalkDepth),
		strings.Repeat("[", jsonkeys.MaxWalkDepth+1) + strings.Repeat("]", jsonkeys.MaxWalkDepth+1),
	} {
		f.Add(body)
	}
	var wordLists [][]string
	for _, ep := range Capabilities {
		if ep.nested != nil {
			wordLists = append(wordLists, ep.nested.hintWords)
		}
	}
	wordLists = append(wordLists, nil, []string{"", "a"})
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		for _, words := range wordLists {
			plain, hint := plainStrings([]byte(body), words)
			if !plain {
				continue
			}
			if want := keyHint([]byte(body), words...); hint != want {
				t.Fatalf("plainStrings(%q, %q) hints %v, keyHint says %v", body, words, hint, want)
			}
		}
		if plain, _ := plainStrings([]byte(body), nil); !plain {
			return
		}
		for _, rules := range []struct {
			freeText   []string
			notFetched [][]string
		}{{nil, nil}, {mediaFreeText, mediaNotFetched}, {dialogueFreeText, dialogueNotFetched}} {
			if err := checkFetchedURLs([]byte(body), rules.freeText, rules.notFetched); err != nil {
				t.Fatalf("plainStrings(%q) calls it plain, but the walk finds %v", body, err)
			}
		}
	})
}
