package passthrough

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// An operator's endpoint is checked for the references of the capability it extends (the
// Responses compact and input_tokens calls, Anthropic's and Gemini's token counts, anything
// else for the generic ones): a body there may not name another account's objects either, and
// the items an answer under /v1/responses/ reveals are the caller's.
func TestOperatorEndpointsAreCheckedLikeTheirCapability(t *testing.T) {
	store := ownersStore(t)
	var extra []Endpoint
	for _, p := range []string{"/v1/responses/compact", "/v1/responses/input_tokens", "/v1/messages/count_tokens",
		"/v1alpha/models/{model}:countTokens", "/v1/moderations", "/v1/completions",
		"/openai/v1/responses", "/api/v1/responses/compact", "/api/anthropic/v1/messages"} {
		ep, err := ParseEndpoint("POST", p)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, ep)
	}
	rt := &Router{Catalog: catalog(t), Owners: store, Extra: extra, Logger: zap.NewNop()}
	exp := time.Now().Add(time.Hour)
	ctx := context.Background()
	if _, err := store.ClaimItems(ctx, "acme", []string{"rs_mine"}, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ClaimItems(ctx, "other", []string{"rs_theirs"}, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTask(ctx, storage.Task{ID: "resp_theirs", Kind: KindResponse, Account: "other", Provider: "ark", Model: "doubao", ExpiresAt: exp.Unix()}); err != nil {
		t.Fatal(err)
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	route := func(path, body string) (Route, error) {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rt, err := rt.Route(httptest.NewRecorder(), r, acme)
		if err == nil {
			rt.Done()
		}
		return rt, err
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/responses/compact", `{"model":"doubao","input":[{"type":"reasoning","id":"rs_theirs","summary":[]}]}`, "input[0].id"},
		{"/v1/responses/compact", `{"model":"doubao","previous_response_id":"resp_theirs"}`, "previous_response_id"},
		{"/v1/responses/input_tokens", `{"model":"doubao","conversation":"conv_x","input":"hi"}`, "conversation"},
		{"/v1/messages/count_tokens", `{"model":"doubao","container":"cntr_x","messages":[]}`, "container"},
		{"/v1alpha/models/gemini-pro:countTokens", `{"generateContentRequest":{"model":"models/gemini-pro","cachedContent":"cachedContents/x"}}`, "generateContentRequest.cachedContent"},
		{"/v1alpha/models/gemini-pro:countTokens", `{"contents":[{"parts":[{"fileData":{"fileUri":"files/abc"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"/v1alpha/models/gemini-pro:countTokens", `{"generateContentRequest":{"model":"models/doubao","contents":[]}}`, "generateContentRequest.model"},
		{"/v1/moderations", `{"model":"doubao","input":[{"type":"input_file","file_id":"file-x"}]}`, "input[0].file_id"},
		// The capability is found in any segment, behind a prefix too; previous_response_id is
		// checked on every added endpoint.
		{"/openai/v1/responses", `{"model":"doubao","previous_response_id":"resp_theirs"}`, "previous_response_id"},
		{"/openai/v1/responses", `{"model":"doubao","input":[{"type":"item_reference","id":"rs_theirs"}]}`, "input[0].id"},
		{"/api/v1/responses/compact", `{"model":"doubao","input":[{"type":"reasoning","id":"rs_theirs","summary":[]}]}`, "input[0].id"},
		{"/api/anthropic/v1/messages", `{"model":"doubao","container":"cntr_x","messages":[]}`, "container"},
		{"/v1/completions", `{"model":"doubao","previous_response_id":"resp_theirs","prompt":"hi"}`, "previous_response_id"},
		{"/v1/moderations", `{"model":"doubao","previous_response_id":"resp_theirs","input":"hi"}`, "previous_response_id"},
		{"/v1alpha/models/gemini-pro:countTokens", `{"previous_response_id":"resp_theirs","contents":[]}`, "previous_response_id"},
	} {
		_, err := route(tc.path, tc.body)
		if e := wantError(t, err, 400, "invalid_request_body"); e.Param != tc.param {
			t.Fatalf("%s %s: param %q, want %q (%s)", tc.path, tc.body, e.Param, tc.param, e.Message)
		}
	}
	// What names nothing passes, a completion's text prompt included; a Responses call's answer
	// reveals items.
	for path, body := range map[string]string{
		"/v1/responses/compact":     `{"model":"doubao","input":[{"type":"reasoning","id":"rs_mine","summary":[]}]}`,
		"/v1/messages/count_tokens": `{"model":"doubao","messages":[{"role":"user","content":"hi"}]}`,
		"/v1/completions":           `{"model":"doubao","prompt":"Say hi"}`,
		"/v1/moderations":           `{"model":"doubao","input":"hi"}`,
		"/openai/v1/responses":      `{"model":"doubao","input":[{"type":"item_reference","id":"rs_mine"}]}`,
	} {
		r, err := route(path, body)
		if err != nil {
			t.Fatalf("%s %s: %v", path, body, err)
		}
		if r.RevealsItems != strings.Contains(path, "/responses") {
			t.Fatalf("%s: reveals items %v", path, r.RevealsItems)
		}
	}
}
