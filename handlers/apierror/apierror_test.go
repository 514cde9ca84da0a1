package apierror

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// blockingBody fails the test if it is read: a body declared too large must be refused from its
// Content-Length alone.
type blockingBody struct{ t *testing.T }

func (b blockingBody) Read([]byte) (int, error) {
	b.t.Error("a body declared larger than the bound was read")
	return 0, io.EOF
}

func TestReadBodyRefusesDeclaredSizeUnread(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = io.NopCloser(blockingBody{t}), 10<<30
	if _, err := ReadBody(httptest.NewRecorder(), r, 1<<20, "invalid_request"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("declared 10 GiB: err = %v, want ErrTooLarge", err)
	}
	// Undeclared (chunked) bodies are bounded while read.
	r = httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", 11)))
	r.ContentLength = -1
	if _, err := ReadBody(httptest.NewRecorder(), r, 10, "invalid_request"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("11 bytes chunked past 10: err = %v, want ErrTooLarge", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader("0123456789"))
	if body, err := ReadBody(httptest.NewRecorder(), r, 10, "invalid_request"); err != nil || string(body) != "0123456789" {
		t.Fatalf("10 bytes at a bound of 10: %q, %v", body, err)
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"application/json; =x": false, "text/plain": false, "": false, "application/jsonx": false,
		"application/json; charset=latin1": false, "application/json; charset=\"ISO-8859-1\"": false,
		"application/json; charset=UTF-16": false, "application/json; Charset=\"UTF-8\"": true,
		"application/json;charset=utf8": true,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if got := IsJSON(r); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestReadBodyDeclaredLength: a body of declared length is read whole; one that ends early is a
// 400; one longer than declared (a replaced body) is read to its end within the bound.
func TestReadBodyDeclaredLength(t *testing.T) {
	read := func(body string, declared, limit int64) ([]byte, error) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.ContentLength = declared
		return ReadBody(httptest.NewRecorder(), r, limit, "invalid_request")
	}
	if body, err := read(`{"model":"m"}`, 13, 100); err != nil || string(body) != `{"model":"m"}` {
		t.Fatalf("declared and sent 13 bytes: %q, %v", body, err)
	}
	if body, err := read("0123456789", 10, 10); err != nil || string(body) != "0123456789" {
		t.Fatalf("10 bytes declared at a bound of 10: %q, %v", body, err)
	}
	if _, err := read("01234", 10, 100); !isBadRequest(err) {
		t.Fatalf("5 of 10 declared bytes: err = %v, want a 400", err)
	}
	if body, err := read("0123456789abc", 10, 100); err != nil || string(body) != "0123456789abc" {
		t.Fatalf("13 bytes sent, 10 declared: %q, %v", body, err)
	}
	if _, err := read("0123456789a", 10, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("11 bytes sent, 10 declared, bound 10: err = %v, want ErrTooLarge", err)
	}
	if _, err := read("0123456789abcdef", 10, 12); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("16 bytes sent, 10 declared, bound 12: err = %v, want ErrTooLarge", err)
	}
}

// isBadRequest reports whether err is a contract error with status 400.
func isBadRequest(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Status == http.StatusBadRequest
}

// BenchmarkReadBody reads a declared-length JSON body of a short chat request and of a long one:
//
//	go test ./handlers/apierror/ -run '^$' -bench ReadBody -benchmem
func BenchmarkReadBody(b *testing.B) {
	for _, size := range []int{70, 16 << 10} {
		body := `{"model":"m","messages":"` + strings.Repeat("x", size-26) + `"}`
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
				if got, err := ReadBody(httptest.NewRecorder(), r, 1<<20, "invalid_request"); err != nil || len(got) != len(body) {
					b.Fatalf("%d bytes, %v", len(got), err)
				}
			}
		})
	}
}

func TestShapeForPicksTheProtocolOfThePath(t *testing.T) {
	for path, want := range map[string]Shape{
		"/api/v3/contents/generations/tasks":              TaskShape,
		"/v1/messages":                                    AnthropicShape,
		"/v1/messages/count_tokens":                       AnthropicShape,
		"/v1beta/models/gemini-2.5-pro:generateContent":   GoogleShape,
		"/v1/models/gemini-2.5-pro:streamGenerateContent": GoogleShape,
		"/v1/models/gpt-4o":                               OpenAIShape, // a model item, not a method
		"/v1/models":                                      OpenAIShape,
		"/v1/messagesx":                                   OpenAIShape,
		"/v1/chat/completions":                            OpenAIShape,
	} {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		if got := ShapeFor(r); got != want {
			t.Errorf("ShapeFor(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestProtocolShapesCarryTheCode(t *testing.T) {
	e := New(http.StatusPaymentRequired, "insufficient_quota", "the balance does not cover it")
	for shape, want := range map[Shape]string{
		AnthropicShape: `{"type":"error","error":{"type":"billing_error","message":"the balance does not cover it","code":"insufficient_quota","param":""}}`,
		GoogleShape:    `{"error":{"code":402,"message":"the balance does not cover it","status":"FAILED_PRECONDITION","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"insufficient_quota","domain":"mediagw"}]}}`,
	} {
		w := httptest.NewRecorder()
		Write(w, shape, e)
		if got := strings.TrimSpace(w.Body.String()); w.Code != http.StatusPaymentRequired || got != want {
			t.Errorf("shape %d: %d %s, want %s", shape, w.Code, got, want)
		}
	}
}
