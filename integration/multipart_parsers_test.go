package integration

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// multipartParsersCaddyfile is the README's pass-through form, with a key that may use one of
// the provider's two transcription models.
const multipartParsersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   whisper-1 gpt-4o-transcribe
		}
		key mg-parsers {
			account acme
			models  whisper-1
		}
	}
}
` + readmePassThroughSite

// formPart is one part of a multipart body as a parser read it.
type formPart struct{ name, value string }

// parseStrictForm reads a multipart body as a strict RFC 2046 parser does: every line ends in
// CRLF, and a delimiter is exactly CRLF "--" boundary, followed by CRLF or by "--".
func parseStrictForm(body []byte, boundary string) []formPart {
	delim := []byte("\r\n--" + boundary)
	body = append([]byte("\r\n"), body...)
	var parts []formPart
	for {
		i := bytes.Index(body, delim)
		if i < 0 {
			return parts
		}
		body = body[i+len(delim):]
		if bytes.HasPrefix(body, []byte("--")) {
			return parts
		}
		if !bytes.HasPrefix(body, []byte("\r\n")) {
			continue // not a delimiter line: content
		}
		body = body[2:]
		end := bytes.Index(body, delim)
		if end < 0 {
			return parts
		}
		head, value, ok := bytes.Cut(body[:end], []byte("\r\n\r\n"))
		if !ok {
			return parts
		}
		parts = append(parts, formPart{formName(strings.Split(string(head), "\r\n")), string(value)})
		body = body[end:]
	}
}

// parseLenientForm reads a multipart body as lenient parsers do (Python's email and cgi
// modules, busboy): a line may end in LF alone, and a line that is "--" boundary followed by
// whitespace is a delimiter.
func parseLenientForm(body []byte, boundary string) []formPart {
	lines := strings.SplitAfter(string(body), "\n")
	var parts []formPart
	var cur *formPart
	var head []string
	inHead := false
	flush := func() {
		if cur != nil {
			cur.value = strings.TrimSuffix(strings.TrimSuffix(cur.value, "\n"), "\r")
			parts = append(parts, *cur)
			cur = nil
		}
	}
	for _, line := range lines {
		trimmed := strings.TrimRight(line, " \t\r\n")
		switch {
		case trimmed == "--"+boundary+"--":
			flush()
			return parts
		case trimmed == "--"+boundary:
			flush()
			inHead, head = true, nil
		case inHead && trimmed == "":
			inHead = false
			cur = &formPart{name: formName(head)}
		case inHead:
			head = append(head, trimmed)
		case cur != nil:
			cur.value += line
		}
	}
	flush()
	return parts
}

// formName is the name parameter of the Content-Disposition among a part's header lines.
func formName(head []string) string {
	for _, h := range head {
		name, value, ok := strings.Cut(h, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Disposition") {
			if _, params, err := mime.ParseMediaType(value); err == nil {
				return params["name"]
			}
		}
	}
	return ""
}

// formParsingUpstream records, for each request, the parts that the strict and the lenient
// parser read from the body it received.
type formParsingUpstream struct {
	mu              sync.Mutex
	strict, lenient [][]formPart
}

func (u *formParsingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	u.mu.Lock()
	u.strict = append(u.strict, parseStrictForm(body, params["boundary"]))
	u.lenient = append(u.lenient, parseLenientForm(body, params["boundary"]))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"text":"heard"}`)
}

// TestMultipartIsReadAsItWasChecked sends multipart bodies that Go's parser, which the gateway
// checks with, reads differently from other parsers: content that a lenient parser takes for a
// boundary (bare LF line endings), a boundary line with trailing whitespace that a strict parser
// takes for content. Each body is refused, or reaches the upstream in a form from which a strict
// CRLF-only parser and a lenient one both read exactly the parts that were checked, and so the
// allowed model only.
func TestMultipartIsReadAsItWasChecked(t *testing.T) {
	up := &formParsingUpstream{}
	provider := httptest.NewServer(up)
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, multipartParsersCaddyfile, map[string]string{"upstream_url": provider.URL})

	cases := map[string]string{
		"canonical": "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF....WAVE\r\n" +
			"--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--B--\r\n",
		// Go reads the first part's content to the CRLF delimiter; a parser that accepts bare LF
		// finds a second model part inside it.
		"bare LF inside content": "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF....WAVE\n--B\nContent-Disposition: form-data; name=\"model\"\n\ngpt-4o-transcribe\n--B--\n\r\n" +
			"--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--B--\r\n",
		// Go takes a delimiter line with trailing spaces for a delimiter; a strict parser reads
		// it, and the model part after it, as content of the file.
		"padded delimiter": "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF....WAVE\r\n" +
			"--B  \r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--B--\r\n",
		// A body in LF mode throughout: Go reads it so; a strict parser reads nothing.
		"LF throughout": "--B\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\n\nRIFF....WAVE\n" +
			"--B\nContent-Disposition: form-data; name=\"model\"\n\nwhisper-1\n--B--\n",
	}
	for name, body := range cases {
		checked := goFormParts(t, body, "B")
		req, err := http.NewRequest(http.MethodPost, base+"/v1/audio/transcriptions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-parsers")
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		up.mu.Lock()
		before := len(up.strict)
		up.mu.Unlock()
		r := do(t, req)
		up.mu.Lock()
		var strict, lenient []formPart
		forwarded := len(up.strict) > before
		if forwarded {
			strict, lenient = up.strict[len(up.strict)-1], up.lenient[len(up.lenient)-1]
		}
		up.mu.Unlock()
		switch {
		case r.status == http.StatusBadRequest && !forwarded && strings.Contains(string(r.body), `"invalid_request_body"`):
			if name == "canonical" {
				t.Errorf("%s: refused: %s", name, r.body)
			}
		case r.status != http.StatusOK || !forwarded:
			t.Errorf("%s: %d %s (forwarded %v), want 200 or a 400 that forwards nothing", name, r.status, r.body, forwarded)
		case !equalParts(strict, checked) || !equalParts(lenient, checked):
			t.Errorf("%s: the strict parser read %q and the lenient one %q; the gateway checked %q", name, strict, lenient, checked)
		}
	}
}

// goFormParts reads a body with Go's mime/multipart, as the gateway checks it.
func goFormParts(t *testing.T, body, boundary string) []formPart {
	t.Helper()
	mr := multipart.NewReader(strings.NewReader(body), boundary)
	var parts []formPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatalf("Go cannot read %q: %v", body, err)
		}
		value, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, formPart{p.FormName(), string(value)})
	}
}

func equalParts(a, b []formPart) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
