package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// toolModelsCaddyfile serves a chat model and an image model from one OpenAI-style provider
// ({{rec_url}}), for a key that may use the chat model only.
const toolModelsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{rec_url}}/openai/v1
			api_key openai-upstream-key
			models gpt-cheap gpt-image-dear
		}
		key mg-tools-chat-only {
			account acme
			models gpt-cheap
		}
		key mg-tools-every-model {
			account acme
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

// TestResponsesToolModelIsChecked has the openai-go SDK create a response with an
// image_generation tool naming an image model the key may not use: OpenAI runs the tool's model
// besides the request's, so it used to reach the provider unchecked. It is refused (403
// model_not_allowed, param tools[0].model) and nothing reaches the upstream. So is the same
// request whose tool names no model, which would run the provider's default image model; a key
// that may use every model may send it.
func TestResponsesToolModelIsChecked(t *testing.T) {
	rec := newRecorder(t)
	base, _ := startSimGateway(t, toolModelsCaddyfile, map[string]string{"rec_url": rec.URL})
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-tools-chat-only"), option.WithMaxRetries(0))
	params := func(toolModel string) responses.ResponseNewParams {
		return responses.ResponseNewParams{
			Model: "gpt-cheap",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("draw a lighthouse")},
			Tools: []responses.ToolUnionParam{{OfImageGeneration: &responses.ToolImageGenerationParam{Model: toolModel}}},
		}
	}
	for _, toolModel := range []string{"gpt-image-dear", ""} {
		_, err := oa.Responses.New(context.Background(), params(toolModel))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "model_not_allowed" || apiErr.Param != "tools[0].model" {
			t.Fatalf("a tool model %q the key may not use: %v", toolModel, err)
		}
	}
	rec.mu.Lock()
	reached := len(rec.requests)
	rec.mu.Unlock()
	if reached != 0 {
		t.Fatalf("the upstream received %d requests", reached)
	}
	// The recorder's answer is no Response; the request reaching it is what counts here.
	every := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-tools-every-model"), option.WithMaxRetries(0))
	_, _ = every.Responses.New(context.Background(), params(""))
	if got := rec.last(t); got.path != "/openai/v1/responses" {
		t.Fatalf("the upstream got %s", got.path)
	}
}

// TestAddedResponsesEndpointChecksToolModels: an endpoint the operator adds with a responses
// segment (endpoint POST /openai/v1/responses, a prefix some SDK setups use) is checked like
// POST /v1/responses (docs/providers.md), so its image_generation tool's model too: the openai-go
// SDK pointed at it with a key of the chat model only gets 403 model_not_allowed (param
// tools[0].model) for a tool naming the image model or none, and nothing reaches the upstream.
// Before, the added endpoint passed such a tool on unchecked.
func TestAddedResponsesEndpointChecksToolModels(t *testing.T) {
	rec := newRecorder(t)
	caddyfile := strings.Replace(toolModelsCaddyfile, "\t\tmediagw_route\n",
		"\t\tmediagw_route {\n\t\t\tendpoint POST /openai/v1/responses\n\t\t}\n", 1)
	base, _ := startSimGateway(t, caddyfile, map[string]string{"rec_url": rec.URL})
	oa := openai.NewClient(option.WithBaseURL(base+"/openai/v1/"), option.WithAPIKey("mg-tools-chat-only"), option.WithMaxRetries(0))
	for _, toolModel := range []string{"gpt-image-dear", ""} {
		_, err := oa.Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "gpt-cheap",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("draw a lighthouse")},
			Tools: []responses.ToolUnionParam{{OfImageGeneration: &responses.ToolImageGenerationParam{Model: toolModel}}},
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "model_not_allowed" || apiErr.Param != "tools[0].model" {
			t.Errorf("a tool model %q the key may not use, on the added endpoint: %v", toolModel, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.requests) != 0 {
		t.Fatalf("the upstream received %d requests", len(rec.requests))
	}
}
