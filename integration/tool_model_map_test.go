package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// toolEnded is the amount held and what ended the hold of the request made after ledger entry
// from: "settle <charged>" or "release".
func toolEnded(t *testing.T, g *gateway, account string, from int) (held, end string) {
	t.Helper()
	for _, e := range endedEntries(t, g, account, from) {
		switch e["kind"] {
		case "hold":
			held = strings.TrimPrefix(fmt.Sprint(e["amount"]), "-")
		case "settle":
			end = "settle " + fmt.Sprint(e["charged"])
		case "release":
			end = "release"
		}
	}
	return held, end
}

// toolModels is the model of each tool, comma-separated.
func toolModels(tools []responses.ToolUnion) string {
	models := make([]string, len(tools))
	for i, tool := range tools {
		models[i] = tool.Model
	}
	return strings.Join(models, ",")
}

// TestResponsesToolModelIsMapped: a provider's model_map maps the names clients use to the
// provider's, so an image_generation tool naming a mapped model (studio-image) reaches the fake
// OpenAI upstream under the provider's name (rimage-upstream), as the request's own model does
// (chat-alias, mapped to rimage-chat), the rest of the body as sent; the images are held and
// charged at the client's name's price (studio-image, 0.02 an image): held 0.02 (chat-alias is
// unpriced), charged 0.02 for the one image made. Answers show the client's names: the response's
// model and its tool's model, in JSON and in each streamed event's response. Before, the tool's
// model went upstream as the client named it, and answers showed the provider's names.
func TestResponsesToolModelIsMapped(t *testing.T) {
	caddyfile := strings.Replace(toolImagesCaddyfile, "\t\t\ttool_image_model rimage-house\n",
		"\t\t\ttool_image_model rimage-house\n\t\t\tmodel_map studio-image rimage-upstream\n\t\t\tmodel_map chat-alias rimage-chat\n\t\t}\n\t\tprice studio-image {\n\t\t\timage 0.02\n", 1)
	fake, upURL := newFakeOpenAIResponses(t)
	base, g := startSimGateway(t, caddyfile, map[string]string{"storage": "storage badger " + t.TempDir(), "up_url": upURL})
	keysEnv{g: g, base: base}.credit(t, "rimages", "10", "rimages-map")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-rimages"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ model, upstream, held, end string }{
		{"rimage-chat", "rimage-chat", "0.12", "settle 0.04"}, // 0.1 + 0.02 held; 20 tokens and one image
		{"chat-alias", "rimage-chat", "0.02", "settle 0.02"},
	} {
		from := len(ledgerEntries(t, g, "rimages"))
		resp, err := oa.Responses.New(ctx, responses.ResponseNewParams{
			Model:           c.model,
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("draw 1")},
			Tools:           []responses.ToolUnionParam{{OfImageGeneration: &responses.ToolImageGenerationParam{Model: "studio-image", Size: "1024x1024"}}},
			MaxOutputTokens: openai.Int(100),
		})
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		got := fake.received()
		sent := got[len(got)-1]
		tool := sent["tools"].([]any)[0].(map[string]any)
		if sent["model"] != c.upstream || tool["model"] != "rimage-upstream" || tool["size"] != "1024x1024" || sent["input"] != "draw 1" {
			t.Errorf("%s: the upstream got model %v, tool %v, input %v", c.model, sent["model"], tool, sent["input"])
		}
		if resp.Model != c.model {
			t.Errorf("%s: the answer names model %q", c.model, resp.Model)
		}
		if tools := toolModels(resp.Tools); tools != "studio-image" {
			t.Errorf("%s: the answer's tools name %q", c.model, tools)
		}
		// Streamed, each event's response shows the client's ids too, the model and the tool's.
		stream := oa.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model:           c.model,
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("draw 1")},
			Tools:           []responses.ToolUnionParam{{OfImageGeneration: &responses.ToolImageGenerationParam{Model: "studio-image", Size: "1024x1024"}}},
			MaxOutputTokens: openai.Int(100),
		})
		shown := 0
		for stream.Next() {
			ev := stream.Current()
			if ev.Response.ID == "" {
				continue
			}
			shown++
			if tools := toolModels(ev.Response.Tools); ev.Response.Model != c.model || tools != "studio-image" {
				t.Errorf("%s: event %s shows model %q, tools %q", c.model, ev.Type, ev.Response.Model, tools)
			}
		}
		if err := stream.Err(); err != nil || shown < 2 {
			t.Errorf("%s: the stream ended with %v after %d events with a response", c.model, err, shown)
		}
		if held, end := toolEnded(t, g, "rimages", from); held != c.held || end != c.end {
			t.Errorf("%s: held %s, %s; want %s, %s", c.model, held, end, c.held, c.end)
		}
	}
}

// TestResponsesToolChoiceHoldsNoImage: with tool_choice "none" the model calls no tool, with a
// function forced it calls that function, and with allowed_tools it calls only those listed
// (OpenAI's reference), so a Responses request of openai-go whose image_generation tool cannot
// be called holds no image: held 0.1 (max_output_tokens 100), charged the 20 tokens, 0.02, with
// max_tool_calls 3 too. allowed_tools listing the image tool, "required" and a forced
// image_generation still hold the image (0.1 + 0.25). Before, each held one image (0.35), or
// max_tool_calls of them.
func TestResponsesToolChoiceHoldsNoImage(t *testing.T) {
	fake, upURL := newFakeOpenAIResponses(t)
	base, g := startSimGateway(t, toolImagesCaddyfile, map[string]string{"storage": "storage badger " + t.TempDir(), "up_url": upURL})
	keysEnv{g: g, base: base}.credit(t, "rimages", "10", "rimages-choice")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-rimages"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lookup := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "lookup",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{}}, Strict: openai.Bool(false)}}
	allowed := func(kinds ...string) responses.ResponseNewParamsToolChoiceUnion {
		var tools []map[string]any
		for _, k := range kinds {
			tool := map[string]any{"type": k}
			if k == "function" {
				tool["name"] = "lookup"
			}
			tools = append(tools, tool)
		}
		return responses.ResponseNewParamsToolChoiceUnion{OfAllowedTools: &responses.ToolChoiceAllowedParam{Mode: responses.ToolChoiceAllowedModeAuto, Tools: tools}}
	}
	for _, c := range []struct {
		name         string
		choice       responses.ResponseNewParamsToolChoiceUnion
		maxToolCalls int64
		images       int
		held, end    string
	}{
		{"none", responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}, 0, 0, "0.1", "settle 0.02"},
		{"none, max_tool_calls 3", responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}, 3, 0, "0.1", "settle 0.02"},
		{"a function", responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "lookup"}}, 0, 0, "0.1", "settle 0.02"},
		{"allowed_tools without the image tool", allowed("function"), 0, 0, "0.1", "settle 0.02"},
		{"allowed_tools with the image tool", allowed("function", "image_generation"), 0, 1, "0.35", "settle 0.06"},
		{"required", responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}, 0, 1, "0.35", "settle 0.06"},
		{"image_generation", responses.ResponseNewParamsToolChoiceUnion{OfHostedTool: &responses.ToolChoiceTypesParam{Type: responses.ToolChoiceTypesTypeImageGeneration}}, 0, 1, "0.35", "settle 0.06"},
	} {
		from := len(ledgerEntries(t, g, "rimages"))
		p := responses.ResponseNewParams{
			Model:           "rimage-chat",
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("draw 1")},
			Tools:           []responses.ToolUnionParam{lookup, {OfImageGeneration: &responses.ToolImageGenerationParam{}}},
			ToolChoice:      c.choice,
			MaxOutputTokens: openai.Int(100),
		}
		if c.maxToolCalls > 0 {
			p.MaxToolCalls = openai.Int(c.maxToolCalls)
		}
		resp, err := oa.Responses.New(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		images := 0
		for _, item := range resp.Output {
			if item.Type == "image_generation_call" {
				images++
			}
		}
		if held, end := toolEnded(t, g, "rimages", from); images != c.images || held != c.held || end != c.end {
			t.Errorf("%s: %d images, held %s, %s; want %d, held %s, %s", c.name, images, held, end, c.images, c.held, c.end)
		}
	}
	if n := len(fake.received()); n != 7 {
		t.Errorf("the upstream got %d requests", n)
	}
}
