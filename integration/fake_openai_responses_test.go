package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// fakeOpenAIResponses is a fake of OpenAI's POST /v1/responses with the image_generation tool,
// from its published reference (and openai-go's types of it): a JSON body of model, input,
// tools ({type:"image_generation", model, size, quality, partial_images}), stream, background,
// max_output_tokens, max_tool_calls and tool_choice, refused with 400 in OpenAI's error shape
// when it has another field or tool member; besides the image_generation tool it takes function
// tools (type, name, description, parameters, strict). The prompt says how many images the model
// makes ("draw N"), at most max_tool_calls, and none where tool_choice is "none", forces a
// function ({"type":"function","name":…}, answered with a function_call item besides the
// message) or is allowed_tools without the image_generation tool, as the reference says; each is an image_generation_call output item (id, status completed,
// result in base64, background, output_format, quality, size, revised_prompt), made at the
// tool's size and quality, or 1024x1024 and medium where the tool says auto or nothing; the
// answer ends with a message and its usage (12 input, 20 output tokens), and the image model's
// tokens apart, in tool_usage.image_gen.
//
// Streamed (stream: true), it sends the reference's events: response.created and .in_progress,
// a message's 3 text deltas (its output_item.added, content_part.added, output_text.delta ×3,
// .done events), then for each image output_item.added (in_progress),
// response.image_generation_call.in_progress and .generating, partial_images times .partial_image
// (with size and quality), .completed and output_item.done (the item with its result), and
// response.completed with the whole response. Scenarios, by prompt: "[refuse]" answers 400
// moderation_blocked; "[fail]" streams response.created, .in_progress and response.failed (no
// output, no usage); "[leave]" stops after the first image's output_item.done and waits for the
// client to leave; "[cut]" drops the connection there. A background response (background: true,
// not streamed) is answered queued, with no output and no usage.
type fakeOpenAIResponses struct {
	mu   sync.Mutex
	log  []map[string]any // the bodies received
	next int
}

// imageB64 is every image's result: about 200 KB of base64, as a real image's is larger still.
var imageB64 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG fake image bytes ", 7000)))

type fakeImageTool struct {
	Type          string `json:"type"`
	Model         string `json:"model,omitempty"`
	Size          string `json:"size,omitempty"`
	Quality       string `json:"quality,omitempty"`
	PartialImages int    `json:"partial_images,omitempty"`
	// A function tool's.
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type fakeResponsesCreate struct {
	Model           string          `json:"model"`
	Input           string          `json:"input"`
	Tools           []fakeImageTool `json:"tools"`
	Stream          bool            `json:"stream"`
	Background      bool            `json:"background"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	MaxToolCalls    *int            `json:"max_tool_calls"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
}

// imageTool is the request's image_generation tool, if it has exactly one and every other tool
// is a named function.
func (req *fakeResponsesCreate) imageTool() (fakeImageTool, bool) {
	var image []fakeImageTool
	for _, t := range req.Tools {
		switch {
		case t.Type == "image_generation":
			image = append(image, t)
		case t.Type != "function" || t.Name == "":
			return fakeImageTool{}, false
		}
	}
	if len(image) != 1 {
		return fakeImageTool{}, false
	}
	return image[0], true
}

// choice is what the request's tool_choice lets the model do: call the image tool, and the
// function it forces ("" for none).
func (req *fakeResponsesCreate) choice() (images bool, function string) {
	var mode string
	if json.Unmarshal(req.ToolChoice, &mode) == nil {
		return mode != "none", ""
	}
	var c struct {
		Type  string           `json:"type"`
		Name  string           `json:"name"`
		Tools []map[string]any `json:"tools"`
	}
	_ = json.Unmarshal(req.ToolChoice, &c)
	switch c.Type {
	case "function":
		return false, c.Name
	case "allowed_tools":
		for _, t := range c.Tools {
			if t["type"] == "image_generation" {
				return true, ""
			}
		}
		return false, ""
	}
	return true, ""
}

func (f *fakeOpenAIResponses) refuse(w http.ResponseWriter, status int, code, message string) {
	writeFakeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": code}})
}

func (f *fakeOpenAIResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer openai-operator-key" {
		f.refuse(w, 401, "invalid_api_key", "Incorrect API key provided")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		f.refuse(w, 404, "not_found", "no such endpoint")
		return
	}
	var req fakeResponsesCreate
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)) // a short body fails decodeStrict
	err := decodeStrict(body, &req)
	tool, ok := req.imageTool()
	if err != nil || req.Model == "" || !ok {
		f.refuse(w, 400, "invalid_request", fmt.Sprintf("the fake takes one image_generation tool, and function tools: %v", err))
		return
	}
	var logged map[string]any
	_ = json.Unmarshal(body, &logged) // decodeStrict read it
	f.mu.Lock()
	f.log = append(f.log, logged)
	f.next++
	id := fmt.Sprintf("resp_img%d", f.next)
	f.mu.Unlock()
	if strings.Contains(req.Input, "[refuse]") {
		f.refuse(w, 400, "moderation_blocked", "Your request was rejected by the safety system.")
		return
	}
	n := 0
	fmt.Sscanf(req.Input[strings.Index(req.Input, "draw ")+len("draw "):], "%d", &n)
	if req.MaxToolCalls != nil {
		n = min(n, *req.MaxToolCalls) // further tool calls are ignored
	}
	images, function := req.choice()
	if !images {
		n = 0
	}
	size, quality := tool.Size, tool.Quality
	if size == "" || size == "auto" {
		size = "1024x1024"
	}
	if quality == "" || quality == "auto" {
		quality = "medium"
	}
	image := func(i int, status string, result bool) map[string]any {
		item := map[string]any{"id": fmt.Sprintf("ig_%s_%d", id, i), "type": "image_generation_call", "status": status}
		if result {
			item["result"], item["background"], item["output_format"] = imageB64, "opaque", "png"
			item["quality"], item["size"], item["revised_prompt"] = quality, size, "a lighthouse at dusk"
		}
		return item
	}
	text := []string{"Here", " is", " it"}
	part := map[string]any{"type": "output_text", "text": strings.Join(text, ""), "annotations": []any{}}
	message := map[string]any{"id": "msg_" + id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	usage := map[string]any{"input_tokens": 12, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 32}
	response := func(status string, output []any, usage any) map[string]any {
		r := map[string]any{"id": id, "object": "response", "created_at": 1764390000, "status": status, "model": req.Model,
			"output": output, "usage": usage, "tools": req.Tools, "parallel_tool_calls": true, "error": nil}
		if usage != nil {
			// The image model's tokens, apart from the response's own usage.
			r["tool_usage"] = map[string]any{"web_search": map[string]any{"num_requests": 0},
				"image_gen": map[string]any{"input_tokens": 50, "input_tokens_details": map[string]any{"image_tokens": 0, "text_tokens": 50},
					"output_tokens": 4160 * n, "total_tokens": 50 + 4160*n}}
		}
		return r
	}
	output := []any{message}
	if function != "" {
		output = append(output, map[string]any{"id": "fc_" + id, "type": "function_call", "status": "completed",
			"call_id": "call_" + id, "name": function, "arguments": "{}"})
	}
	for i := range n {
		output = append(output, image(i, "completed", true))
	}
	if req.Background && !req.Stream {
		// A background response answers at once, queued, with no output and no usage yet.
		writeFakeJSON(w, 200, response("queued", []any{}, nil))
		return
	}
	if !req.Stream {
		writeFakeJSON(w, 200, response("completed", output, usage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	seq := 0
	event := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		flusher.Flush()
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})
	if strings.Contains(req.Input, "[fail]") {
		failed := response("failed", []any{}, nil)
		failed["error"] = map[string]any{"code": "server_error", "message": "The model failed to generate a response."}
		event("response.failed", map[string]any{"response": failed})
		return
	}
	started := maps.Clone(message)
	started["status"], started["content"] = "in_progress", []any{}
	event("response.output_item.added", map[string]any{"output_index": 0, "item": started})
	event("response.content_part.added", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, d := range text {
		event("response.output_text.delta", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0, "delta": d, "logprobs": []any{}})
	}
	event("response.output_text.done", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0, "text": part["text"], "logprobs": []any{}})
	event("response.content_part.done", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0, "part": part})
	event("response.output_item.done", map[string]any{"output_index": 0, "item": output[0]})
	for i := range n {
		itemID := fmt.Sprintf("ig_%s_%d", id, i)
		at := map[string]any{"item_id": itemID, "output_index": i + 1}
		with := func(more map[string]any) map[string]any {
			for k, v := range at {
				more[k] = v
			}
			return more
		}
		event("response.output_item.added", map[string]any{"output_index": i + 1, "item": image(i, "in_progress", false)})
		event("response.image_generation_call.in_progress", with(map[string]any{}))
		event("response.image_generation_call.generating", with(map[string]any{}))
		for p := range tool.PartialImages {
			event("response.image_generation_call.partial_image", with(map[string]any{"partial_image_index": p,
				"partial_image_b64": imageB64[:4096], "size": size, "quality": quality, "background": "opaque", "output_format": "png"}))
		}
		event("response.image_generation_call.completed", with(map[string]any{}))
		event("response.output_item.done", map[string]any{"output_index": i + 1, "item": image(i, "completed", true)})
		if strings.Contains(req.Input, "[leave]") {
			<-r.Context().Done() // the client leaves
			return
		}
		if strings.Contains(req.Input, "[cut]") {
			panic(http.ErrAbortHandler) // net/http drops the connection without ending the body
		}
	}
	event("response.completed", map[string]any{"response": response("completed", output, usage)})
}

// received returns the bodies the fake received.
func (f *fakeOpenAIResponses) received() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.log...)
}

// newFakeOpenAIResponses starts the fake on a loopback port; its base URL is srv.URL + "/v1".
func newFakeOpenAIResponses(t *testing.T) (*fakeOpenAIResponses, string) {
	f := &fakeOpenAIResponses{}
	return f, startFake(t, f).URL
}
