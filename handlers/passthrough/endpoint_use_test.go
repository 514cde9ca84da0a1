package passthrough

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// TestCountsAndEmbeddingsAreClassifiedByPath: a count of input tokens (built in, or an
// operator's endpoint of that path shape) is routed, model-gated, and not billable; an
// embedding or a rerank is billable and held without output tokens; a generation is neither.
func TestCountsAndEmbeddingsAreClassifiedByPath(t *testing.T) {
	var extra []Endpoint
	for _, path := range []string{"/v1/messages/count_tokens", "/v1/responses/input_tokens", "/v2/embeddings", "/v2/rerank", "/v1/moderations", "/v1/projects/{model}:countTokens"} {
		ep, err := ParseEndpoint("POST", path)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, ep)
	}
	rt := &Router{Catalog: catalog(t), Extra: extra}
	id := auth.Identity{Account: "a"}
	for _, tc := range []struct {
		path, body          string
		billable, inputOnly bool
	}{
		{"/v1beta/models/gemini-pro:countTokens", `{"contents":[{"parts":[{"text":"hi"}]}]}`, false, false},
		{"/v1/models/gemini-pro:countTokens", `{}`, false, false},
		{"/v1/messages/count_tokens", `{"model":"doubao","messages":[]}`, false, false},
		{"/v1/responses/input_tokens", `{"model":"doubao","input":"hi"}`, false, false},
		{"/v1/projects/gemini-pro:countTokens", `{}`, false, false},
		{"/v1beta/models/gemini-pro:embedContent", `{"content":{"parts":[{"text":"hi"}]}}`, true, true},
		{"/v1beta/models/gemini-pro:batchEmbedContents", `{"requests":[]}`, true, true},
		{"/v1/embeddings", `{"model":"doubao","input":"hi","max_tokens":99}`, true, true},
		{"/v2/embeddings", `{"model":"doubao","input":"hi"}`, true, true},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[]}`, true, false},
		{"/v1/messages", `{"model":"doubao","messages":[]}`, true, false},
		{"/v1/moderations", `{"model":"doubao","input":"hi"}`, true, false},
		{"/v1/rerank", `{"model":"doubao","query":"q","max_tokens":5}`, true, true},
		{"/v2/rerank", `{"model":"doubao","query":"q"}`, true, true},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		route.Done()
		if route.Billable != tc.billable || route.Sizing.InputOnly != tc.inputOnly {
			t.Errorf("%s: billable %v, embeds %v; want %v, %v", tc.path, route.Billable, route.Sizing.InputOnly, tc.billable, tc.inputOnly)
		}
	}
	// A count is still gated by the key's models.
	denied := auth.Identity{Account: "a", Models: []string{"doubao"}}
	r := httptest.NewRequest("POST", "/v1beta/models/gemini-pro:countTokens", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	if _, err := rt.Route(httptest.NewRecorder(), r, denied); err == nil {
		t.Error("a count of a model the key may not use was routed")
	}
}
