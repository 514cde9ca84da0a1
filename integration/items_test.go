package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mediagw/mediagw/internal/testredis"
)

// itemsFake is a Responses upstream whose answers carry items with ids, as OpenAI's do: every
// response has a reasoning item and a message; a background response has them only when read
// again; input_items lists the input with ids. It keeps the last body it was sent.
type itemsFake struct {
	*httptest.Server
	mu        sync.Mutex
	responses map[string]map[string]any
	lastBody  []byte
}

func newItemsFake(t *testing.T) *itemsFake {
	f := &itemsFake{responses: map[string]map[string]any{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *itemsFake) last() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastBody
}

func (f *itemsFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	suffix := strings.ToLower(rand.Text()[:10])
	answer := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			panic(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/v1/responses")
	switch {
	case r.Method == "POST" && p == "":
		f.lastBody = body
		var req struct {
			Stream, Background bool
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		id := "resp_" + suffix
		output := []any{
			map[string]any{"type": "reasoning", "id": "rs_" + suffix, "summary": []any{}},
			map[string]any{"type": "message", "id": "msg_" + suffix, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": "hi", "annotations": []any{}}}},
		}
		resp := map[string]any{"id": id, "object": "response", "model": "gpt-4o-mini", "status": "completed", "output": output}
		f.responses[id] = resp
		if req.Background {
			answer(map[string]any{"id": id, "object": "response", "model": "gpt-4o-mini", "status": "queued", "output": []any{}})
			return
		}
		if !req.Stream {
			answer(resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(v map[string]any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
			w.(http.Flusher).Flush()
		}
		event(map[string]any{"type": "response.created", "sequence_number": 0, "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "output": []any{}}})
		for i, item := range output {
			event(map[string]any{"type": "response.output_item.added", "sequence_number": 1 + 2*i, "output_index": i, "item": item})
			event(map[string]any{"type": "response.output_item.done", "sequence_number": 2 + 2*i, "output_index": i, "item": item})
		}
		event(map[string]any{"type": "response.completed", "sequence_number": 5, "response": resp})
	case r.Method == "GET" && strings.HasSuffix(p, "/input_items"):
		answer(map[string]any{"object": "list", "has_more": false, "data": []any{
			map[string]any{"type": "message", "id": "msg_in_" + suffix, "role": "user", "status": "completed",
				"content": []any{map[string]any{"type": "input_text", "text": "hi"}}},
		}})
	case r.Method == "GET":
		resp, ok := f.responses[strings.TrimPrefix(p, "/")]
		if !ok {
			http.Error(w, `{"error":{"message":"no such response"}}`, 404)
			return
		}
		answer(resp)
	default:
		http.Error(w, `{"error":{"message":"not here"}}`, 404)
	}
}

// streamedItems creates a streamed response of model with c and returns the ids of the items of
// its response.completed event, which must be two.
func streamedItems(t *testing.T, c openai.Client, model string) []string {
	t.Helper()
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var streamed []string
	for stream.Next() {
		if e := stream.Current(); e.Type == "response.completed" {
			for _, it := range e.Response.Output {
				streamed = append(streamed, it.ID)
			}
		}
	}
	if err := stream.Err(); err != nil || len(streamed) != 2 {
		t.Fatalf("stream: %v, items %v", err, streamed)
	}
	return streamed
}

// TestResponseItemsBelongToTheirAccount: customer A's response items (reasoning and message, from a
// JSON answer, a stream, a background response read later, and an input_items listing) are A's.
// Customer B presenting one of them by id gets 400 naming the item, the same answer as for an
// unknown id, and nothing reaches the upstream; A presenting its own passes, and the upstream
// receives exactly the bytes A sent.
func TestResponseItemsBelongToTheirAccount(t *testing.T) {
	ark, fake := newProviderFake(t, true), newItemsFake(t)
	base, _ := startSimGateway(t, tenancyCaddyfile, map[string]string{"ark_url": ark.URL, "openai_url": fake.URL, "route_options": ""})
	ctx := context.Background()
	var sent []byte
	capture := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if r.Body != nil {
			sent, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(sent))
		}
		return next(r)
	})
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0), capture)
	}
	a, b := client("mg-customer-a"), client("mg-customer-b")
	reuse := func(c openai.Client, items ...responses.ResponseInputItemUnionParam) (*responses.Response, error) {
		input := append(responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("more", responses.EasyInputMessageRoleUser)}, items...)
		return c.Responses.New(ctx, responses.ResponseNewParams{
			Model: "gpt-4o-mini", Store: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		})
	}
	reasoning := func(id string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemParamOfReasoning(id, []responses.ResponseReasoningItemSummaryParam{})
	}
	message := func(id string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{
			{OfOutputText: &responses.ResponseOutputTextParam{Text: "hi", Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}}},
		}, id, responses.ResponseOutputMessageStatusCompleted)
	}

	// A's items, from every kind of answer.
	first, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || len(first.Output) != 2 {
		t.Fatalf("create = %+v, %v", first, err)
	}
	rsA, msgA := first.Output[0].ID, first.Output[1].ID
	streamed := streamedItems(t, a, "gpt-4o-mini")
	queued, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Background: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || len(queued.Output) != 0 {
		t.Fatalf("background create = %+v, %v", queued, err)
	}
	done, err := a.Responses.Get(ctx, queued.ID, responses.ResponseGetParams{})
	if err != nil || len(done.Output) != 2 {
		t.Fatalf("background read = %+v, %v", done, err)
	}
	inputs, err := a.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{})
	if err != nil || len(inputs.Data) != 1 {
		t.Fatalf("input items = %+v, %v", inputs, err)
	}

	// B presents A's items: refused before the upstream, like an unknown id.
	var apiErr *openai.Error
	var messages []string
	before := fake.last()
	for _, tc := range []struct {
		item  responses.ResponseInputItemUnionParam
		param string
	}{
		{reasoning(rsA), "input[1].id"},
		{message(msgA), "input[1].id"},
		{reasoning(streamed[0]), "input[1].id"},
		{responses.ResponseInputItemParamOfItemReference(done.Output[1].ID), "input[1].id"},
		{responses.ResponseInputItemParamOfItemReference(inputs.Data[0].ID), "input[1].id"},
		{reasoning("rs_nobody"), "input[1].id"},
	} {
		_, err := reuse(b, tc.item)
		if !errorsAs(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != tc.param || apiErr.Type != "invalid_request_error" {
			t.Fatalf("B presenting %s: %v", sent, err)
		}
		messages = append(messages, apiErr.Message)
	}
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Fatalf("answers differ between another account's item and an unknown one: %q", messages)
		}
	}
	if !bytes.Equal(fake.last(), before) {
		t.Fatalf("a refused body reached the upstream: %s", fake.last())
	}
	// A case variant of the id key is no way around it.
	r := call(t, "POST", base+"/v1/responses", "mg-customer-b", `{"model":"gpt-4o-mini","input":[{"type":"reasoning","summary":[],"ID":"`+rsA+`"}]}`)
	if e, _ := r.json(t)["error"].(map[string]any); r.status != 400 || e["param"] != "input[0].ID" {
		t.Fatalf("B with a case variant = %d %s", r.status, r.body)
	}

	// A presents its own, from each answer: accepted, and forwarded byte for byte.
	for _, items := range [][]responses.ResponseInputItemUnionParam{
		{reasoning(rsA), message(msgA)},
		{reasoning(streamed[0]), message(streamed[1])},
		{reasoning(done.Output[0].ID), responses.ResponseInputItemParamOfItemReference(done.Output[1].ID)},
		{responses.ResponseInputItemParamOfItemReference(inputs.Data[0].ID)},
	} {
		if _, err := reuse(a, items...); err != nil {
			t.Fatalf("A presenting its own items %s: %v", sent, err)
		}
		if !bytes.Equal(fake.last(), sent) {
			t.Fatalf("the upstream received %s; A sent %s", fake.last(), sent)
		}
	}
}

// itemsInstanceCaddyfile is one gateway instance of a fleet on one redis-server, passing
// /v1/responses through to a Responses fake.
const itemsInstanceCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage redis %[1]s {
			key_prefix %[2]s
		}
		provider openai {
			base_url %[3]s/v1
			api_key  openai-operator-key
			models   gpt-4o-mini
		}
		key mg-customer-a {
			account customer-a
		}
		key mg-customer-a2 {
			account customer-a
		}
		key mg-customer-b {
			account customer-b
		}
	}
}

http://127.0.0.1:%[4]d {
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

// TestResponseItemsAcrossInstances: items recorded by one instance of a Redis fleet are the
// account's on every instance, for every key of the account, and no other account's.
func TestResponseItemsAcrossInstances(t *testing.T) {
	t.Parallel()
	redis := testredis.Start(t, testredis.Options{})
	fake := newItemsFake(t)
	var bases []string
	for range 2 {
		port := freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		startCaddyProcess(t, fmt.Sprintf(itemsInstanceCaddyfile, redis.URL(), "mg-items", fake.URL, port), base+"/")
		bases = append(bases, base)
	}
	r := call(t, "POST", bases[0]+"/v1/responses", "mg-customer-a", `{"model":"gpt-4o-mini","input":"hi","stream":true}`)
	if r.status != 200 || !strings.Contains(string(r.body), "response.completed") {
		t.Fatalf("streamed create on the first instance = %d %s", r.status, r.body)
	}
	var rs string
	for line := range strings.Lines(string(r.body)) {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"response.output_item.done"`) && rs == "" {
			var e struct{ Item struct{ ID string } }
			decodeJSON(t, []byte(data), &e)
			rs = e.Item.ID
		}
	}
	if !strings.HasPrefix(rs, "rs_") {
		t.Fatalf("no reasoning item in %s", r.body)
	}
	body := `{"model":"gpt-4o-mini","input":[{"type":"reasoning","id":"` + rs + `","summary":[]},{"role":"user","content":"more"}]}`
	if r := call(t, "POST", bases[1]+"/v1/responses", "mg-customer-b", body); r.status != 400 || !strings.Contains(string(r.body), `"param":"input[0].id"`) {
		t.Fatalf("another account on the second instance = %d %s", r.status, r.body)
	}
	for _, key := range []string{"mg-customer-a", "mg-customer-a2"} {
		if r := call(t, "POST", bases[1]+"/v1/responses", key, body); r.status != 200 || !bytes.Equal(fake.last(), []byte(body)) {
			t.Fatalf("%s on the second instance = %d %s; upstream got %s", key, r.status, r.body, fake.last())
		}
	}
}
