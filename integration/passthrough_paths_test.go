package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestPathsAroundForwardedEndpointsAreRefused sends, with a valid key, methods and paths next to
// the forwarded endpoints, written byte for byte on the wire: other methods, trailing and doubled
// slashes, dot segments plain and encoded, encoded slashes, backslashes and dots, and endpoints
// the gateway does not forward. Each is refused with 404 and none reaches the upstream. (An
// encoded '/' used to be decoded and forwarded: /v1/chat%2Fcompletions reached the provider as
// /chat/completions, a path that a proxy or firewall in front had read as another.)
func TestPathsAroundForwardedEndpointsAreRefused(t *testing.T) {
	rec := newRecorder(t)
	base, _, _ := startCredentialsGateway(t, rec.URL, "")
	chat := `{"model":"gpt-x","messages":[]}`
	gemini := `{"contents":[]}`
	for _, tc := range []struct{ method, path, body string }{
		{"HEAD", "/v1/chat/completions", ""},
		{"OPTIONS", "/v1/chat/completions", ""},
		{"GET", "/v1/chat/completions", ""},
		{"PUT", "/v1/chat/completions", chat},
		{"POST", "/v1/chat/completions/", chat},
		{"POST", "//v1/chat/completions", chat},
		{"POST", "/v1//chat/completions", chat},
		{"POST", "/v1/chat/completions;x=1", chat},
		{"POST", "/v1/models/../chat/completions", chat},
		{"POST", "/v1/models/%2e%2e/chat/completions", chat},
		{"POST", "/v1/chat%2Fcompletions", chat},
		{"POST", "/v1%2fchat%2fcompletions", chat},
		{"POST", "/v1/chat/completions%2F", chat},
		{"POST", "/v1/chat%5Ccompletions", chat},
		{"GET", "/v1/files", ""},
		{"POST", "/v1/files", chat},
		{"GET", "/v1/models/../x", ""},
		{"POST", "/v1beta/models/gemini-x:generateContent/", gemini},
		{"POST", "/v1beta/models/gemini-x%2F..%2Fgemini-y:generateContent", gemini},
		{"POST", "/v1beta/models/gemini%2Ex:generateContent", gemini},
		{"OPTIONS", "/v1beta/models/gemini-x:generateContent", ""},
		{"POST", "/v1beta/models/gemini-x:generateContent:x", gemini},
		{"POST", "/v1beta/tunedModels/gemini-x:generateContent", gemini},
		{"POST", "/v1beta/models/gemini-x:GenerateContent", gemini},
		{"POST", "/v1/messages%2F..%2Fmessages", `{"model":"claude-x","max_tokens":1,"messages":[]}`},
	} {
		rec.mu.Lock()
		before := len(rec.requests)
		rec.mu.Unlock()
		raw := tc.method + " " + tc.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer mg-logtest-valid-5f1c2e\r\n" +
			"Content-Type: application/json\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(tc.body)) + tc.body
		status := rawMethodRequest(t, base, tc.method, raw)
		rec.mu.Lock()
		reached := len(rec.requests) > before
		rec.mu.Unlock()
		if status != http.StatusNotFound || reached {
			t.Errorf("%s %s: status %d, reached the upstream: %v", tc.method, tc.path, status, reached)
		}
	}
	// The endpoint itself, and a path whose letters (not separators) are encoded, are forwarded.
	for _, path := range []string{"/v1/chat/completions", "/v1/chat/%63ompletions"} {
		raw := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer mg-logtest-valid-5f1c2e\r\n" +
			"Content-Type: application/json\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(chat)) + chat
		if status := rawMethodRequest(t, base, "POST", raw); status != http.StatusOK || rec.last(t).path != "/openai/v1/chat/completions" {
			t.Errorf("POST %s: status %d, upstream path %s", path, status, rec.last(t).path)
		}
	}
}

// rawMethodRequest is rawRequest for a request of any method (a HEAD answer has no body).
func rawMethodRequest(t *testing.T, base, method, raw string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// TestMethodOverrideNeverReachesTheUpstream has the openai-go SDK send a checked chat completion
// with X-HTTP-Method-Override: GET, which Google's APIs and many web frameworks honour. The fake
// upstream honours it as they do: a POST to /chat/completions taken for GET lists the stored chat
// completions of the operator's upstream account, every tenant's, an endpoint the gateway does not
// forward. The gateway refuses the override (400), as it does ?_method=GET.
func TestMethodOverrideNeverReachesTheUpstream(t *testing.T) {
	up, methods := startOverrideHonouringUpstream(t)
	base, _, _ := startCredentialsGateway(t, up.URL, "")
	params := openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	for _, opt := range []option.RequestOption{option.WithHeader("X-HTTP-Method-Override", "GET"), option.WithQuery("_method", "GET")} {
		oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-logtest-valid-5f1c2e"), option.WithMaxRetries(0), opt)
		_, err := oa.Chat.Completions.New(context.Background(), params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request_body" {
			t.Errorf("a chat completion with a method override: %v", err)
		}
	}
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-logtest-valid-5f1c2e"), option.WithMaxRetries(0))
	if chat, err := oa.Chat.Completions.New(context.Background(), params); err != nil || chat.Choices[0].Message.Content != "ok" {
		t.Fatalf("a plain chat completion: %v", err)
	}
	if got := methods(); !slices.Equal(got, []string{http.MethodPost}) {
		t.Errorf("the upstream took requests as %v, want one POST", got)
	}
}
