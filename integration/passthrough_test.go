package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
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
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const passthroughCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models gpt-4o-mini text-embedding-3-small gpt-image-1 gpt-image-async tts-1
		}
		provider rec {
			base_url {{rec_url}}/openai/v1
			api_key rec-upstream-key
			models rec-chat whisper-1 rerank-1
		}
		provider anthropic {
			base_url {{rec_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models claude-x
		}
		provider gemini {
			base_url {{rec_url}}/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models gemini-x
		}
		key mg-caller-secret-1 {
			account acme
		}
		key mg-caller-secret-2 {
			account other
		}
		key mg-chat-only {
			account acme
			models gpt-4o-*
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@models path /v1/models /v1/models/*
		mediagw_models @models
		@images path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @images
		mediagw_route
		@sim vars {mediagw.provider} sim
		reverse_proxy @sim 127.0.0.1:{{sim_port}}
		reverse_proxy {{rec_url}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// recorder is a fake upstream that records what it received.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	// release, when set, holds a streaming answer after its first event until closed.
	release chan struct{}
}

type recorded struct {
	method, path, query string
	header              http.Header
	bodySHA             [32]byte
	bodyLen             int
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, _ := io.Copy(h, r.Body)
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	rec.mu.Lock()
	rec.requests = append(rec.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), sum, int(n)})
	release := rec.release
	rec.mu.Unlock()
	if release != nil && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"second\"}}]}\n\ndata: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"ok":true,"path":%q,"bytes":%d}`, r.URL.Path, n)
}

func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.requests) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return rec.requests[len(rec.requests)-1]
}

// startPassthroughGateway runs the gateway with the simulator and a recorder as upstreams.
func startPassthroughGateway(t *testing.T) (base string, rec *recorder) {
	rec = newRecorder(t)
	base, _ = startSimGateway(t, passthroughCaddyfile, map[string]string{"rec_url": rec.URL})
	return base, rec
}

// assertNoCallerKey checks that no header the upstream received carries a caller's key.
func assertNoCallerKey(t *testing.T, got recorded) {
	t.Helper()
	for name, values := range got.header {
		for _, v := range values {
			if strings.Contains(v, "mg-caller") || strings.Contains(v, "mg-chat") {
				t.Fatalf("the upstream received the caller's key in %s: %q", name, v)
			}
		}
	}
}

func TestOpenAIClientThroughGateway(t *testing.T) {
	base, _ := startPassthroughGateway(t)
	ctx := context.Background()
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-caller-secret-1"), option.WithMaxRetries(0))

	page, err := oa.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Contains(ids, "gpt-4o-mini") || !slices.Contains(ids, "gemini-x") || len(ids) != 10 {
		t.Fatalf("models = %v", ids)
	}

	// models.retrieve: a model the key may use, else 404 model_not_found, the same for a model
	// that exists but the key may not use as for one that does not exist.
	if m, err := oa.Models.Get(ctx, "gemini-x"); err != nil || m.ID != "gemini-x" || m.OwnedBy != "gemini" {
		t.Fatalf("models.retrieve = %+v, %v", m, err)
	}
	limitedModels := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-chat-only"), option.WithMaxRetries(0))
	var unknownErr, forbiddenErr *openai.Error
	_, unknown := oa.Models.Get(ctx, "no-such-model")
	_, forbidden := limitedModels.Models.Get(ctx, "gemini-x")
	if !errorsAs(unknown, &unknownErr) || !errorsAs(forbidden, &forbiddenErr) || unknownErr.StatusCode != 404 || unknownErr.Code != "model_not_found" ||
		forbiddenErr.StatusCode != 404 || forbiddenErr.Code != unknownErr.Code || forbiddenErr.Type != unknownErr.Type || forbiddenErr.Param != unknownErr.Param {
		t.Fatalf("models.retrieve of an unknown model: %v; of a model the key may not use: %v", unknown, forbidden)
	}

	chat, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil || len(chat.Choices) != 1 || !strings.Contains(chat.Choices[0].Message.Content, "simulator") {
		t.Fatalf("chat = %+v, %v", chat, err)
	}

	stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var text strings.Builder
	chunks := 0
	var last openai.ChatCompletionChunk
	for stream.Next() {
		chunks++
		if last = stream.Current(); len(last.Choices) > 0 {
			text.WriteString(last.Choices[0].Delta.Content)
		}
	}
	// The gateway asks for the stream's usage (stream_options.include_usage), which the SDK
	// did not: its 5 chunks end with a sixth of the usage and no choice, which the SDK reads.
	if err := stream.Err(); err != nil || chunks != 6 || text.String() != "Hello from the mediagw simulator." {
		t.Fatalf("stream: %d chunks %q, %v", chunks, text.String(), err)
	}
	if len(last.Choices) != 0 || last.Usage.CompletionTokens == 0 {
		t.Fatalf("the stream's last chunk: %s, want its usage", last.RawJSON())
	}

	emb, err := oa.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "text-embedding-3-small", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[0].Embedding) == 0 {
		t.Fatalf("embeddings = %+v, %v", emb, err)
	}

	edit := map[string]any{"model": "gpt-image-1", "prompt": "make it blue", "n": 2,
		"images": []map[string]string{{"image_url": "https://cdn.example.com/cat.png"}}}
	var images openai.ImagesResponse
	if err := oa.Post(ctx, "images/edits", edit, &images); err != nil || len(images.Data) != 2 || images.Data[0].URL == "" {
		t.Fatalf("image edit = %+v, %v", images, err)
	}

	// An asynchronous edit: the task id is recorded for its account only.
	edit["model"] = "gpt-image-async"
	var task struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := oa.Post(ctx, "images/edits", edit, &task); err != nil || task.ID == "" {
		t.Fatalf("async edit = %+v, %v", task, err)
	}
	var got map[string]any
	if err := oa.Get(ctx, "images/tasks/"+task.ID, nil, &got); err != nil || got["status"] != "succeeded" {
		t.Fatalf("image task = %v, %v", got, err)
	}
	other := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-caller-secret-2"), option.WithMaxRetries(0))
	err = other.Get(ctx, "images/tasks/"+task.ID, nil, &got)
	var apiErr *openai.Error
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "task_not_found" {
		t.Fatalf("another account read the image task: %v", err)
	}
	if r := call(t, "GET", base+"/v1/images/tasks/imgt-unknown", "mg-caller-secret-1", nil); r.status != 404 {
		t.Fatalf("unknown image task = %d %s", r.status, r.body)
	}

	// Refusals in the OpenAI shape.
	_, err = oa.Images.Edit(ctx, openai.ImageEditParams{Prompt: "x", Image: openai.ImageEditParamsImageUnion{OfFile: io.Reader(strings.NewReader("png"))}})
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("multipart image edit = %v, want 400", err)
	}
	limited := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-chat-only"), option.WithMaxRetries(0))
	_, err = limited.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}})
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "model_not_allowed" {
		t.Fatalf("model outside the allow-list = %v", err)
	}
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "no-such-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model = %v", err)
	}
	// A model name of 100 KB is not repeated whole in the answer (apierror.Echo).
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: strings.Repeat("m", 100_000), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 404 || len(apiErr.Message) > 400 || !strings.Contains(apiErr.Message, "mmm…") {
		t.Fatalf("a 100 KB unknown model = %d, message of %d bytes", apiErr.StatusCode, len(apiErr.Message))
	}
	err = oa.Post(ctx, "images/edits", map[string]any{"model": "gpt-image-1", "prompt": "p", "images": []map[string]string{{"image_url": "data:image/png;base64,AA"}}}, &images)
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "images[0].image_url" {
		t.Fatalf("data URL image = %v", err)
	}
	// An edit without a model is missing_model, as the task API's; a mask is checked as images are.
	err = oa.Post(ctx, "images/edits", map[string]any{"prompt": "p", "images": []map[string]string{{"image_url": "https://cdn.example.com/a.png"}}}, &images)
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "missing_model" || apiErr.Param != "model" {
		t.Fatalf("edit without a model = %v", err)
	}
	err = oa.Post(ctx, "images/edits", map[string]any{"model": "gpt-image-1", "prompt": "p", "images": []map[string]string{{"image_url": "https://cdn.example.com/a.png"}},
		"mask": map[string]string{"image_url": "http://169.254.169.254/latest/meta-data"}}, &images)
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "mask.image_url" {
		t.Fatalf("private mask = %v", err)
	}
	// Fields the gateway does not know are forwarded, once the URLs in them are public ones.
	unread := map[string]any{"model": "gpt-image-1", "prompt": "like http://10.0.0.1/", "style": map[string]any{"refs": []string{"https://cdn.example.com/style.png"}},
		"images": []map[string]string{{"image_url": "https://cdn.example.com/a.png"}}}
	if err := oa.Post(ctx, "images/edits", unread, &images); err != nil || len(images.Data) == 0 {
		t.Fatalf("edit with a public URL in an unknown field = %+v, %v", images, err)
	}
	unread["images"] = []map[string]string{{"image_url": "https://cdn.example.com/a.png", "url": "http://169.254.169.254/latest/meta-data/"}}
	err = oa.Post(ctx, "images/edits", unread, &images)
	if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request" || apiErr.Param != "images[0].url" {
		t.Fatalf("metadata URL beside a checked image_url = %v", err)
	}
}

func TestSSEIsStreamedEventByEvent(t *testing.T) {
	base, rec := startPassthroughGateway(t)
	rec.release = make(chan struct{})
	defer func() {
		select {
		case <-rec.release:
		default:
			close(rec.release)
		}
	}()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"rec-chat","stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer mg-caller-secret-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := firstEventArrives(t, resp.Body, 5*time.Second)
	close(rec.release)
	rest, _ := io.ReadAll(lines)
	if !strings.Contains(string(rest), "second") || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("rest of the stream = %q", rest)
	}
	assertNoCallerKey(t, rec.last(t))
}

func TestMultipartModelAfterFile(t *testing.T) {
	base, rec := startPassthroughGateway(t)
	file := make([]byte, 3<<20)
	rand.Read(file)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "speech.wav")
	fw.Write(file)
	mw.WriteField("response_format", "json")
	mw.WriteField("model", "whisper-1")
	mw.Close()

	req, _ := http.NewRequest("POST", base+"/v1/audio/transcriptions", bytes.NewReader(body.Bytes()))
	req.Header.Set("Authorization", "Bearer mg-caller-secret-1")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r := do(t, req)
	if r.status != 200 {
		t.Fatalf("transcription = %d %s", r.status, r.body)
	}
	got := rec.last(t)
	// The client's parts arrive as sent, re-encoded with a boundary the gateway chose.
	_, params, _ := mime.ParseMediaType(got.header.Get("Content-Type"))
	want := bytes.ReplaceAll(body.Bytes(), []byte(mw.Boundary()), []byte(params["boundary"]))
	if params["boundary"] == mw.Boundary() || got.bodySHA != sha256.Sum256(want) || got.bodyLen != len(want) {
		t.Fatalf("the upstream received %d bytes (boundary %q) that differ from the %d sent", got.bodyLen, params["boundary"], len(want))
	}
	if got.path != "/openai/v1/audio/transcriptions" || got.header.Get("Authorization") != "Bearer rec-upstream-key" {
		t.Fatalf("upstream saw %s with Authorization %q", got.path, got.header.Get("Authorization"))
	}
	assertNoCallerKey(t, got)

	// The same through the simulator, which parses the multipart body.
	r = multipartCall(t, base, "tts-1-not-there", file[:1000])
	if r.status != 404 {
		t.Fatalf("unknown multipart model = %d %s", r.status, r.body)
	}
}

func multipartCall(t *testing.T, base, model string, file []byte) response {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "a.wav")
	fw.Write(file)
	mw.WriteField("model", model)
	mw.Close()
	req, _ := http.NewRequest("POST", base+"/v1/audio/translations", &body)
	req.Header.Set("Authorization", "Bearer mg-caller-secret-1")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return do(t, req)
}

func TestProviderAuthStylesAndPaths(t *testing.T) {
	base, rec := startPassthroughGateway(t)
	for _, tc := range []struct {
		name, path, body, wantPath, header, value string
	}{
		{"generateContent, model in the path", "/v1beta/models/gemini-x:generateContent?key=mg-caller-secret-1&alt=sse",
			`{"contents":[{"parts":[{"text":"hi"}]}]}`, "/v1beta/models/gemini-x:generateContent", "X-Goog-Api-Key", "gemini-upstream-key"},
		// Under /v1 (the Google Gen AI SDK 3.x), past mediagw_models, to the provider's base path.
		{"generateContent under v1", "/v1/models/gemini-x:generateContent?key=mg-caller-secret-1",
			`{"contents":[{"parts":[{"text":"hi"}]}]}`, "/v1beta/models/gemini-x:generateContent", "X-Goog-Api-Key", "gemini-upstream-key"},
		{"batchEmbedContents under v1", "/v1/models/gemini-x:batchEmbedContents",
			`{"requests":[{"model":"models/gemini-x","content":{"parts":[{"text":"hi"}]}}]}`, "/v1beta/models/gemini-x:batchEmbedContents", "X-Goog-Api-Key", "gemini-upstream-key"},
		{"messages", "/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[]}`, "/anthropic/v1/messages", "X-Api-Key", "anthropic-upstream-key"},
		{"rerank", "/v1/rerank", `{"model":"rerank-1","query":"q","documents":["a"]}`, "/openai/v1/rerank", "Authorization", "Bearer rec-upstream-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer mg-caller-secret-1")
			req.Header.Set("X-Api-Key", "mg-caller-secret-1")
			req.Header.Set("Content-Type", "application/json")
			if r := do(t, req); r.status != 200 {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			got := rec.last(t)
			if got.path != tc.wantPath || got.header.Get(tc.header) != tc.value {
				t.Fatalf("upstream saw %s, %s: %q", got.path, tc.header, got.header.Get(tc.header))
			}
			if got.bodySHA != sha256.Sum256([]byte(tc.body)) {
				t.Fatal("the body changed on the way")
			}
			if strings.Contains(got.query, "key=") {
				t.Fatalf("the caller's ?key= reached the upstream: %s", got.query)
			}
			assertNoCallerKey(t, got)
		})
	}
	for _, tc := range []struct {
		name, path, contentType, body string
		status                        int
		code                          string
	}{
		{"no model", "/v1/embeddings", "application/json", `{"input":"x"}`, 400, "missing_model"},
		{"model not a string", "/v1/embeddings", "application/json", `{"model":5}`, 400, "invalid_request_body"},
		{"bad JSON", "/v1/embeddings", "application/json", `{"model":`, 400, "invalid_request_body"},
		{"not JSON", "/v1/audio/speech", "text/plain", `hello`, 400, "missing_model"},
		{"unknown path model", "/v1beta/models/nope:generateContent", "application/json", `{}`, 404, "model_not_found"},
		{"unknown path model under v1", "/v1/models/nope:countTokens", "application/json", `{}`, 404, "model_not_found"},
		{"v1 body model not the path's", "/v1/models/gemini-x:batchEmbedContents", "application/json", `{"requests":[{"model":"models/claude-x"}]}`, 400, "invalid_request_body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer mg-caller-secret-1")
			req.Header.Set("Content-Type", tc.contentType)
			r := do(t, req)
			if r.status != tc.status || r.apiError(t).code != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	// Speech answers binary audio through the simulator.
	r := call(t, "POST", base+"/v1/audio/speech", "mg-caller-secret-1", `{"model":"tts-1","input":"hello","voice":"alloy"}`)
	if r.status != 200 || r.header.Get("Content-Type") != "audio/mpeg" || !bytes.HasPrefix(r.body, []byte("ID3")) {
		t.Fatalf("speech = %d %s", r.status, r.header.Get("Content-Type"))
	}
}

// firstEventArrives waits for the first line of a streamed answer, which must carry "first",
// while the upstream still holds the stream open; it returns the reader for the rest.
func firstEventArrives(t *testing.T, body io.Reader, within time.Duration) *bufio.Reader {
	t.Helper()
	lines := bufio.NewReader(body)
	first := make(chan string, 1)
	go func() {
		line, _ := lines.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if !strings.Contains(line, "first") {
			t.Fatalf("first line = %q", line)
		}
	case <-time.After(within):
		t.Fatal("the first event did not arrive while the upstream held the stream open")
	}
	return lines
}
