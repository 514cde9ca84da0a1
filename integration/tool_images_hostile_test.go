package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// toolImagesGateway starts toolImagesCaddyfile on Badger in front of the Responses upstream at
// upURL, credits the rimages account 100 (ref is the credit's idempotency key), and returns the
// gateway and an openai-go client of its key.
func toolImagesGateway(t *testing.T, upURL, ref string) (*gateway, openai.Client) {
	t.Helper()
	base, g := startSimGateway(t, toolImagesCaddyfile, map[string]string{"storage": "storage badger " + t.TempDir(), "up_url": upURL})
	keysEnv{g: g, base: base}.credit(t, "rimages", "100", ref)
	return g, openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-rimages"), option.WithMaxRetries(0))
}

// drawParams is a rimage-chat request (max_output_tokens 100) with one image_generation tool,
// and max_tool_calls when it is above 0.
func drawParams(prompt string, tool responses.ToolImageGenerationParam, maxToolCalls int64) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:           "rimage-chat",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		Tools:           []responses.ToolUnionParam{{OfImageGeneration: &tool}},
		MaxOutputTokens: openai.Int(100),
	}
	if maxToolCalls > 0 {
		p.MaxToolCalls = openai.Int(maxToolCalls)
	}
	return p
}

// startImageFloodingResponses is a hostile OpenAI Responses upstream: whatever max_tool_calls
// says, its answer (JSON, or a stream's response.completed) reports 50 completed
// image_generation_call items at 1024x1024 high, and 20 output tokens. Asked for "[omit]", its
// stream completes two image calls in its events (image_generation_call.completed and
// output_item.done) and then lists no output in response.completed.
func startImageFloodingResponses(t *testing.T) string {
	srv := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Input  string `json:"input"`
			Stream bool   `json:"stream"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" || json.NewDecoder(r.Body).Decode(&req) != nil {
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such route", "type": "invalid_request_error"}})
			return
		}
		output := []any{}
		for i := range 50 {
			output = append(output, map[string]any{"id": fmt.Sprintf("ig_flood_%d", i), "type": "image_generation_call", "status": "completed",
				"result": "QUJD", "size": "1024x1024", "quality": "high", "output_format": "png", "background": "opaque"})
		}
		resp := map[string]any{"id": "resp_flood", "object": "response", "created_at": 1764390000, "status": "completed", "model": req.Model,
			"output": output, "usage": map[string]any{"input_tokens": 12, "output_tokens": 20, "total_tokens": 32,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
		if !req.Stream {
			writeFakeJSON(w, 200, resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		events := []map[string]any{
			{"type": "response.created", "response": map[string]any{"id": "resp_flood", "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}},
		}
		if strings.Contains(req.Input, "[omit]") {
			for i, item := range output[:2] {
				events = append(events,
					map[string]any{"type": "response.output_item.added", "output_index": i, "item": map[string]any{"id": item.(map[string]any)["id"], "type": "image_generation_call", "status": "in_progress"}},
					map[string]any{"type": "response.image_generation_call.completed", "output_index": i, "item_id": item.(map[string]any)["id"]},
					map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
			}
			resp["output"] = []any{}
		}
		events = append(events, map[string]any{"type": "response.completed", "response": resp})
		for i, ev := range events {
			ev["sequence_number"] = i
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
	}))
	return srv.URL
}

// TestToolImagesPastMaxToolCallsAreNotCharged: a Responses request's max_tool_calls bounds the
// built-in tool calls the provider makes ("any further attempts to call a tool will be
// ignored"), so an answer that reports more images than that reports images that were not
// made: a hostile provider reporting 50 images to max_tool_calls 2 (JSON, or a stream's
// response.completed) is charged 2 of them, 0.02 + 2 × 0.17 = 0.36, on openai-go; so is a
// stream whose events complete two images and whose response.completed lists none (before:
// 0.02, the images free). A request
// without max_tool_calls is still charged every image reported (50 × 0.17 + 0.02 = 8.52): its
// model may call the tool as often as it likes. Before, the first two were charged 8.52 each.
func TestToolImagesPastMaxToolCallsAreNotCharged(t *testing.T) {
	g, oa := toolImagesGateway(t, startImageFloodingResponses(t), "rimages-flood")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	high := responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}
	params := func(maxToolCalls int64) responses.ResponseNewParams { return drawParams("draw", high, maxToolCalls) }
	charged := func(from int) string {
		t.Helper()
		_, end := toolEnded(t, g, "rimages", from)
		return strings.TrimPrefix(end, "settle ")
	}

	from := len(ledgerEntries(t, g, "rimages"))
	if _, err := oa.Responses.New(ctx, params(2)); err != nil {
		t.Fatal(err)
	}
	if got := charged(from); got != "0.36" {
		t.Errorf("JSON, max_tool_calls 2, 50 images reported: charged %s; want 0.36", got)
	}

	from = len(ledgerEntries(t, g, "rimages"))
	stream := oa.Responses.NewStreaming(ctx, params(2))
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := charged(from); got != "0.36" {
		t.Errorf("a stream, max_tool_calls 2, 50 images reported: charged %s; want 0.36", got)
	}

	// A final event that lists none of the two images the stream's events completed.
	from = len(ledgerEntries(t, g, "rimages"))
	stream = oa.Responses.NewStreaming(ctx, drawParams("draw [omit]", high, 2))
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := charged(from); got != "0.36" {
		t.Errorf("a stream whose final event leaves out its two images: charged %s; want 0.36", got)
	}

	from = len(ledgerEntries(t, g, "rimages"))
	if _, err := oa.Responses.New(ctx, params(0)); err != nil {
		t.Fatal(err)
	}
	if got := charged(from); got != "8.52" {
		t.Errorf("JSON without max_tool_calls, 50 images reported: charged %s; want 8.52", got)
	}
}

// TestToolModelTheGatewayDoesNotServeIsNotFound: a Responses image_generation tool naming an
// image model that no provider of the gateway lists (rimage-unlisted) is 404 model_not_found
// (param tools[0].model) for a key that may use every model, as the request's own model would
// be, and nothing reaches the provider. Before, the provider ran it and its images were free:
// the gateway has no price for a model it does not serve, so two images were charged nothing.
func TestToolModelTheGatewayDoesNotServeIsNotFound(t *testing.T) {
	fake, upURL := newFakeOpenAIResponses(t)
	_, oa := toolImagesGateway(t, upURL, "rimages-unlisted")
	_, err := oa.Responses.New(context.Background(), drawParams("draw 2", responses.ToolImageGenerationParam{Model: "rimage-unlisted", Size: "1024x1024", Quality: "high"}, 0))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Param != "tools[0].model" {
		t.Fatalf("a tool model the gateway does not serve: %v; want 404 model_not_found, param tools[0].model", err)
	}
	if got := len(fake.received()); got != 0 {
		t.Errorf("the upstream received %d requests; want none", got)
	}
}

// TestBackgroundResponsesAreChargedWhatTheyMayMake: a background response goes on at the
// provider whatever its client does, and its output and images reach the client later through
// retrieves, which charge nothing. So, with openai-go:
//   - a background stream the client leaves after the first of two images (max_tool_calls 2,
//     1024x1024 high) is charged its estimate, 0.1 of tokens and 2 × 0.17 of images = 0.44
//     (before: the 3 deltas and the one image it had seen, 0.173, while the provider went on to
//     make the second image and the rest of the text);
//   - a background response with an image_generation tool and no max_tool_calls, whose images
//     nothing bounds (it was held, and charged, one image however many it made), is
//     400 invalid_request_body (param max_tool_calls), and never reaches the provider; with
//     tool_choice "none" it holds no image and is taken.
func TestBackgroundResponsesAreChargedWhatTheyMayMake(t *testing.T) {
	fake, upURL := newFakeOpenAIResponses(t)
	g, oa := toolImagesGateway(t, upURL, "rimages-background")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := func(prompt string, maxToolCalls int64) responses.ResponseNewParams {
		p := drawParams(prompt, responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}, maxToolCalls)
		p.Background = openai.Bool(true)
		return p
	}

	from := len(ledgerEntries(t, g, "rimages"))
	leaveCtx, leave := context.WithCancel(ctx)
	stream := oa.Responses.NewStreaming(leaveCtx, params("draw 2 [leave]", 2))
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_item.done" && ev.Item.Type == "image_generation_call" {
			leave()
		}
	}
	leave()
	if held, end := toolEnded(t, g, "rimages", from); held != "0.44" || end != "settle 0.44" {
		t.Errorf("a background stream the client left: held %s, %s; want 0.44, settle 0.44", held, end)
	}

	before := len(fake.received())
	_, err := oa.Responses.New(ctx, params("draw 3", 0))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request_body" || apiErr.Param != "max_tool_calls" {
		t.Fatalf("a background response with unbounded images: %v; want 400 invalid_request_body, param max_tool_calls", err)
	}
	if got := len(fake.received()); got != before {
		t.Errorf("the upstream received the refused request")
	}
	none := params("draw 1", 0)
	none.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}
	if resp, err := oa.Responses.New(ctx, none); err != nil || resp.Status != "queued" {
		t.Fatalf("a background response whose tool_choice is none: %v", err)
	}
}
