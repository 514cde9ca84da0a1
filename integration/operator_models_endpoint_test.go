package integration

import (
	"net/http"
	"testing"
)

// TestOperatorModelsEndpointsCheckTheBodysModels adds generate-content methods the gateway does
// not serve itself (endpoint POST /v1alpha/models/{model}:countTokens, :batchEmbedContents): as
// on the built-in ones, a body's generateContentRequest.model, and each batch request's model,
// must name the path's model (bare or as models/…), so a key that allows the path's model cannot
// have the upstream run another one named in the body; the path's model there passes. Before,
// only a top-level model was compared, and the rest reached the upstream.
func TestOperatorModelsEndpointsCheckTheBodysModels(t *testing.T) {
	env := startTenancyGateway(t, "endpoint POST /v1alpha/models/{model}:countTokens", "endpoint POST /v1alpha/models/{model}:batchEmbedContents")
	const key = "mg-customer-a"
	for _, tc := range []struct{ method, body, param string }{
		{"countTokens", `{"generateContentRequest":{"model":"models/gpt-5","contents":[]}}`, "generateContentRequest.model"},
		{"countTokens", `{"generate_content_request":{"model":"gpt-5","contents":[]}}`, "generate_content_request.model"},
		{"countTokens", `{"generateContentRequest":{"Model":"models/gpt-5","contents":[]}}`, "generateContentRequest.Model"},
		{"batchEmbedContents", `{"requests":[{"model":"models/gpt-4o-mini","content":{"parts":[]}},{"model":"models/gpt-5","content":{"parts":[]}}]}`, "requests[1].model"},
	} {
		r := call(t, http.MethodPost, env.base+"/v1alpha/models/gpt-4o-mini:"+tc.method, key, tc.body)
		var e struct {
			Error struct{ Code, Param string }
		}
		decodeJSON(t, r.body, &e)
		if r.status != http.StatusBadRequest || e.Error.Code != "invalid_request_body" || e.Error.Param != tc.param {
			t.Errorf("%s %s = %d %s; want 400 invalid_request_body naming %s", tc.method, tc.body, r.status, r.body, tc.param)
		}
	}
	for method, body := range map[string]string{
		"countTokens":        `{"generateContentRequest":{"model":"models/gpt-4o-mini","contents":[]}}`,
		"batchEmbedContents": `{"requests":[{"model":"models/gpt-4o-mini","content":{"parts":[]}},{"model":"gpt-4o-mini","content":{"parts":[]}}]}`,
	} {
		if r := call(t, http.MethodPost, env.base+"/v1alpha/models/gpt-4o-mini:"+method, key, body); r.status != http.StatusOK {
			t.Errorf("%s naming the path's model = %d %s; want 200", method, r.status, r.body)
		}
	}
	requireOnlyModels(t, env.openai, "gpt-4o-mini")
}
