package integration

import (
	"bytes"
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// itemsModelsCaddyfile passes /v1/responses through to a Responses fake, for one account with a
// key that may use every model and a key restricted to one of them.
const itemsModelsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{openai_url}}/v1
			api_key  openai-operator-key
			models   gpt-4o-mini gpt-5
		}
		key mg-items-every {
			account acme
		}
		key mg-items-mini {
			account acme
			models  gpt-4o-mini
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {{openai_url}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

// TestResponseItemsOfAnotherModelAreRefused: the items of a response that another model made in
// the account (a JSON answer, a stream, an input_items listing) cannot be named by a key
// restricted to other models: 400 naming the item, the answer to an unknown id, and nothing
// reaches the upstream; as the key can read no such response. The key's own items, and another
// key's items of a model it may use, pass; a key that may use both models uses either. Before,
// items recorded the account only, so the restricted key could replay gpt-5's reasoning.
func TestResponseItemsOfAnotherModelAreRefused(t *testing.T) {
	fake := newItemsFake(t)
	base, _ := startSimGateway(t, itemsModelsCaddyfile, map[string]string{"openai_url": fake.URL})
	ctx := context.Background()
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	}
	every, mini := client("mg-items-every"), client("mg-items-mini")
	create := func(c openai.Client, model string) *responses.Response {
		t.Helper()
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		if err != nil || len(r.Output) != 2 {
			t.Fatalf("%s create = %+v, %v", model, r, err)
		}
		return r
	}
	reuse := func(c openai.Client, model string, item responses.ResponseInputItemUnionParam) error {
		input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("more", responses.EasyInputMessageRoleUser), item}
		_, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: model, Store: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
		return err
	}
	reasoning := func(id string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemParamOfReasoning(id, []responses.ResponseReasoningItemSummaryParam{})
	}
	ref := responses.ResponseInputItemParamOfItemReference

	// gpt-5's items, made with the key that may use every model.
	big := create(every, "gpt-5")
	streamed := streamedItems(t, every, "gpt-5")
	inputs, err := every.Responses.InputItems.List(ctx, big.ID, responses.InputItemListParams{})
	if err != nil || len(inputs.Data) != 1 {
		t.Fatalf("input items = %+v, %v", inputs, err)
	}
	// gpt-4o-mini's items, made with either key.
	small := create(every, "gpt-4o-mini")
	own := create(mini, "gpt-4o-mini")

	// The restricted key names gpt-5's items: refused as an unknown id is, before the upstream.
	var unknown *openai.Error
	if err := reuse(mini, "gpt-4o-mini", reasoning("rs_nobody")); !errorsAs(err, &unknown) || unknown.StatusCode != 400 || unknown.Param != "input[1].id" {
		t.Fatalf("an unknown item: %v", err)
	}
	before := fake.last()
	for _, item := range []responses.ResponseInputItemUnionParam{
		reasoning(big.Output[0].ID), ref(big.Output[1].ID), reasoning(streamed[0]), ref(streamed[1]), ref(inputs.Data[0].ID),
	} {
		var e *openai.Error
		if err := reuse(mini, "gpt-4o-mini", item); !errorsAs(err, &e) || e.StatusCode != 400 || e.Param != "input[1].id" || e.Message != unknown.Message {
			t.Errorf("the gpt-4o-mini key naming a gpt-5 item: %v, want the answer to an unknown id (%s)", err, unknown.Message)
		}
	}
	if !bytes.Equal(fake.last(), before) {
		t.Fatalf("a refused body reached the upstream: %s", fake.last())
	}

	// Items of its model pass, whichever key of the account made them; the unrestricted key
	// uses every item, with either model.
	for _, tc := range []struct {
		c     openai.Client
		model string
		item  responses.ResponseInputItemUnionParam
	}{
		{mini, "gpt-4o-mini", reasoning(own.Output[0].ID)},
		{mini, "gpt-4o-mini", ref(small.Output[1].ID)},
		{every, "gpt-4o-mini", reasoning(big.Output[0].ID)},
		{every, "gpt-5", ref(own.Output[1].ID)},
		{every, "gpt-5", ref(inputs.Data[0].ID)},
	} {
		if err := reuse(tc.c, tc.model, tc.item); err != nil {
			t.Errorf("%s naming an item it sees: %v", tc.model, err)
		}
	}
}
