package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestMethodOverrideInTheBodyNeverReachesTheUpstream: web frameworks that honour ?_method= read
// it from the body of a POST too (Laravel and Symfony from a form's or a JSON body's _method,
// Rails from a form's), so a chat completion whose JSON names "_method":"GET", or a
// transcription whose form has a _method part, is refused with 400 as ?_method=GET is; the fake
// upstream honours them as those frameworks do, and takes only the plain requests. Before, both
// reached it and were taken for GETs, which list the operator's upstream account's objects.
func TestMethodOverrideInTheBodyNeverReachesTheUpstream(t *testing.T) {
	up, methods := startOverrideHonouringUpstream(t)
	base, _, _ := startCredentialsGateway(t, up.URL, "")
	const key = "mg-logtest-valid-5f1c2e"
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	for _, name := range []string{"_method", "_METHOD"} {
		_, err := oa.Chat.Completions.New(context.Background(), params, option.WithJSONSet(name, "GET"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request_body" {
			t.Errorf("a chat completion with %s in its body: %v", name, err)
		}
	}
	transcription := func(override bool) response {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.WriteField("model", "gpt-x")
		if override {
			_ = mw.WriteField("_method", "GET")
		}
		fw, _ := mw.CreateFormFile("file", "a.wav")
		fw.Write([]byte("RIFF"))
		mw.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/audio/transcriptions", &b)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return do(t, req)
	}
	if r := transcription(true); r.status != 400 || errorCode(t, r) != "invalid_request_body" {
		t.Errorf("a transcription with a _method part = %d %s; want 400 invalid_request_body", r.status, r.body)
	}
	if chat, err := oa.Chat.Completions.New(context.Background(), params); err != nil || chat.Choices[0].Message.Content != "ok" {
		t.Fatalf("a plain chat completion: %v", err)
	}
	if r := transcription(false); r.status != 200 {
		t.Fatalf("a plain transcription = %d %s", r.status, r.body)
	}
	if got := methods(); !slices.Equal(got, []string{http.MethodPost, http.MethodPost}) {
		t.Errorf("the upstream took requests as %v, want two POSTs", got)
	}
}

// startOverrideHonouringUpstream is a chat and transcription upstream that takes a POST for the
// method its overrides name, as Google's APIs and web frameworks do: an X-HTTP-Method-Override
// header, a _method query parameter, a JSON body's _method (in any case, as Go's decoder reads
// it) or a form's _method part. Taken for a GET, it lists the chat completions of every tenant.
// methods is the method it took each request for, in order.
func startOverrideHonouringUpstream(t *testing.T) (up *httptest.Server, methods func() []string) {
	var mu sync.Mutex
	var taken []string
	up = startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		body, _ := io.ReadAll(r.Body) // a short local body
		if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && r.Method == http.MethodPost {
			method = o
		}
		if m := r.URL.Query().Get("_method"); m != "" {
			method = m
		}
		if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
			form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(1 << 20)
			if err == nil && len(form.Value["_method"]) > 0 {
				method = form.Value["_method"][0]
			}
		} else {
			var b struct {
				Method string `json:"_method"`
			}
			if json.Unmarshal(body, &b) == nil && b.Method != "" {
				method = b.Method
			}
		}
		mu.Lock()
		taken = append(taken, method)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case method == http.MethodGet:
			fmt.Fprint(w, `{"object":"list","data":[{"id":"chatcmpl-of-another-tenant","object":"chat.completion"}],"has_more":false}`)
		case strings.HasSuffix(r.URL.Path, "/transcriptions"):
			fmt.Fprint(w, `{"text":"hello"}`)
		default:
			fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		}
	}))
	return up, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(taken)
	}
}
