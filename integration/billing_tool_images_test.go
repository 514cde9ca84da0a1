package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mediagw/mediagw/internal/testredis"
)

// toolImagesCaddyfile serves a text model priced by its output (0.001 a token) and the image
// models of the Responses image_generation tool from the fake OpenAI Responses upstream
// ({{up_url}}): rimage-house, which the provider names as the model a tool without one runs
// (tool_image_model), at 0.04 an image, 0.17 for 1024x1024 high and 0.25 for 1536x1024 high;
// rimage-cheap at 0.01; gpt-image-2, OpenAI's default, which this provider does not run for such a
// tool, at 9.
const toolImagesCaddyfile = `{
	{{globals}}
	mediagw {
		{{storage}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models rimage-chat gpt-image-2 rimage-house rimage-cheap
			tool_image_model rimage-house
		}
		price rimage-chat {
			output_tokens 1000
		}
		price gpt-image-2 {
			image 9
		}
		price rimage-house {
			image 0.04
			image 1024x1024 high 0.17
			image 1536x1024 high 0.25
		}
		price rimage-cheap {
			image 0.01
		}
		key mg-rimages {
			account rimages
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// TestResponsesToolImagesAreCharged: a Responses request with an image_generation tool, sent
// by openai-go, holds its tokens (max_output_tokens 100: 0.1) and the images its tool may make
// at the image model's price (the tool's size and quality; auto or none: the costliest the
// price lists, 0.25), max_tool_calls of them or else one, and settles the tokens it used (20
// output tokens: 0.02) and each image made, at the size and quality the answer reports for what
// the tool left open, on both stores, with one hold and one settlement each:
//   - JSON, a tool naming no model (rimage-house's price), auto: held 0.35, one 1024x1024 medium
//     image made, charged 0.02 + 0.04 = 0.06;
//   - JSON, 1024x1024 high, no max_tool_calls: held 0.1 + 0.17 = 0.27, three images made,
//     charged past the hold, 0.02 + 3 × 0.17 = 0.53;
//   - JSON, the same with max_tool_calls 3 and two images made: held 0.1 + 3 × 0.17 = 0.61,
//     charged 0.02 + 2 × 0.17 = 0.36; with max_tool_calls 2 and three asked for, the provider
//     makes two: held 0.44, charged 0.36;
//   - JSON, rimage-cheap named, two images: held 0.1 + 0.01, charged 0.02 + 0.02 = 0.04;
//   - streamed with a partial image each, two images, auto: held 0.35, charged from
//     response.completed, 0.02 + 2 × 0.04 = 0.1;
//   - streamed, 1536x1024, no quality (held at 1536x1024 high, 0.25), the client leaving after
//     the first of two images' output_item.done: charged the 3 deltas seen (0.003) and that
//     image, at the medium quality it reports (0.04): 0.043;
//   - the same stream broken off by the upstream there: 0.043 too;
//   - a background response (answered queued, before any image), max_tool_calls 1: charged its
//     estimate, 0.35;
//   - refused by the provider (400 moderation_blocked), and a stream that fails before any
//     output (response.failed): released, nothing charged.
//
// Before this, the images were free: each request was charged its tokens alone.
func TestResponsesToolImagesAreCharged(t *testing.T) {
	redis := testredis.Start(t, testredis.Options{})
	for _, store := range []struct{ name, line string }{
		{"badger", "storage badger " + t.TempDir()},
		{"redis", "storage redis " + redis.URL() + " {\n\t\t\tkey_prefix rimages\n\t\t}"},
	} {
		t.Run(store.name, func(t *testing.T) {
			fake, upURL := newFakeOpenAIResponses(t)
			base, g := startSimGateway(t, toolImagesCaddyfile, map[string]string{"storage": store.line, "up_url": upURL})
			keys := keysEnv{g: g, base: base}
			keys.credit(t, "rimages", "10", "rimages-"+store.name)
			oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-rimages"), option.WithMaxRetries(0))
			params := drawParams
			// ended is the amount of the hold and what ended it of the request just made.
			ended := func(from int) (held, end string) {
				t.Helper()
				entries := endedEntries(t, g, "rimages", from)
				kinds := []string{}
				for _, e := range entries {
					kinds = append(kinds, fmt.Sprint(e["kind"]))
					switch e["kind"] {
					case "hold":
						held = strings.TrimPrefix(fmt.Sprint(e["amount"]), "-")
					case "settle":
						end = "settle " + fmt.Sprint(e["charged"])
					case "release":
						end = "release"
					}
				}
				if !slices.Equal(kinds, []string{"hold", "settle"}) && !slices.Equal(kinds, []string{"hold", "release"}) {
					t.Fatalf("ledger entries %v: want one hold and one end", entries)
				}
				return held, end
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			for _, c := range []struct {
				name         string
				prompt       string
				tool         responses.ToolImageGenerationParam
				maxToolCalls int64
				held, end    string
			}{
				{"default model, auto", "draw 1", responses.ToolImageGenerationParam{}, 0, "0.35", "settle 0.06"},
				{"more than held", "draw 3", responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}, 0, "0.27", "settle 0.53"},
				{"max_tool_calls", "draw 2", responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}, 3, "0.61", "settle 0.36"},
				{"max_tool_calls bounds what is made", "draw 3", responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}, 2, "0.44", "settle 0.36"},
				{"a named model", "draw 2", responses.ToolImageGenerationParam{Model: "rimage-cheap"}, 0, "0.11", "settle 0.04"},
			} {
				from := len(ledgerEntries(t, g, "rimages"))
				resp, err := oa.Responses.New(ctx, params(c.prompt, c.tool, c.maxToolCalls))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				images := 0
				for _, item := range resp.Output {
					if item.Type == "image_generation_call" && item.Result != "" {
						images++
					}
				}
				if held, end := ended(from); images == 0 || held != c.held || end != c.end {
					t.Errorf("%s: %d images, held %s, %s; want held %s, %s", c.name, images, held, end, c.held, c.end)
				}
			}

			// Streamed to its end: settled from response.completed.
			from := len(ledgerEntries(t, g, "rimages"))
			stream := oa.Responses.NewStreaming(ctx, params("draw 2", responses.ToolImageGenerationParam{PartialImages: openai.Int(1)}, 0))
			partials := 0
			for stream.Next() {
				if stream.Current().Type == "response.image_generation_call.partial_image" {
					partials++
				}
			}
			if err := stream.Err(); err != nil || partials != 2 {
				t.Fatalf("stream: %d partial images, %v", partials, err)
			}
			if held, end := ended(from); held != "0.35" || end != "settle 0.1" {
				t.Errorf("a stream: held %s, %s; want 0.35, settle 0.1", held, end)
			}

			// The client leaves after the first image's output_item.done.
			from = len(ledgerEntries(t, g, "rimages"))
			leaveCtx, leave := context.WithCancel(ctx)
			stream = oa.Responses.NewStreaming(leaveCtx, params("draw 2 [leave]", responses.ToolImageGenerationParam{Size: "1536x1024"}, 0))
			for stream.Next() {
				ev := stream.Current()
				if ev.Type == "response.output_item.done" && ev.Item.Type == "image_generation_call" {
					leave()
				}
			}
			leave()
			if held, end := ended(from); held != "0.35" || end != "settle 0.043" {
				t.Errorf("a stream the client left: held %s, %s; want 0.35, settle 0.043", held, end)
			}

			// The upstream breaks the stream off after the first image: charged as the client's
			// leaving is.
			from = len(ledgerEntries(t, g, "rimages"))
			stream = oa.Responses.NewStreaming(ctx, params("draw 2 [cut]", responses.ToolImageGenerationParam{Size: "1536x1024"}, 0))
			for stream.Next() {
			}
			if held, end := ended(from); held != "0.35" || end != "settle 0.043" {
				t.Errorf("a stream the upstream cut: held %s, %s; want 0.35, settle 0.043", held, end)
			}

			// A background response answers before any image is made: charged its estimate. (It
			// must bound its images with max_tool_calls: TestBackgroundResponsesAreChargedWhatTheyMayMake.)
			from = len(ledgerEntries(t, g, "rimages"))
			bg := params("draw 1", responses.ToolImageGenerationParam{}, 1)
			bg.Background = openai.Bool(true)
			if resp, err := oa.Responses.New(ctx, bg); err != nil || resp.Status != "queued" {
				t.Fatalf("a background response: %v", err)
			}
			if held, end := ended(from); held != "0.35" || end != "settle 0.35" {
				t.Errorf("a background response: held %s, %s; want 0.35, settle 0.35", held, end)
			}

			// Refused, and failed before any output: released.
			from = len(ledgerEntries(t, g, "rimages"))
			_, err := oa.Responses.New(ctx, params("draw 1 [refuse]", responses.ToolImageGenerationParam{}, 0))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
				t.Fatalf("a refused request: %v", err)
			}
			if held, end := ended(from); held != "0.35" || end != "release" {
				t.Errorf("a refused request: held %s, %s; want 0.35, release", held, end)
			}
			from = len(ledgerEntries(t, g, "rimages"))
			stream = oa.Responses.NewStreaming(ctx, params("draw 1 [fail]", responses.ToolImageGenerationParam{}, 0))
			for stream.Next() {
			}
			if held, end := ended(from); held != "0.35" || end != "release" {
				t.Errorf("a failed stream: held %s, %s; want 0.35, release", held, end)
			}
			// 0.06 + 0.53 + 0.36 + 0.36 + 0.04 + 0.1 + 0.043 + 0.043 + 0.35 = 1.886 of 10.
			if b := keys.admin(t, "GET", "/mediagw/accounts/rimages/balance", nil); b.field("balance") != "8.114" || b.field("held") != "0" {
				t.Errorf("balance %s; want 8.114, nothing held", b.body)
			}
			if got := len(fake.received()); got != 11 {
				t.Errorf("the upstream received %d requests, want 11", got)
			}
		})
	}
}
