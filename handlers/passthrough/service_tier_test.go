package passthrough

import "testing"

// TestServiceTiers: a charged request that asks its provider for a dearer way of serving it
// (OpenAI's and Gemini's service_tier priority, Anthropic's inference_geo us and speed fast) is
// refused naming the field; the standard and cheaper values pass, and so does a count of tokens,
// which costs nothing. The fields follow the priced fields' rule (no case variant).
func TestServiceTiers(t *testing.T) {
	batches, err := ParseEndpoint("POST", "/v1/messages/batches")
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: catalog(t), Extra: []Endpoint{batches}, Owners: ownersStore(t)}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"priority"}`, "service_tier"},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"Priority"}`, "service_tier"},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"scale"}`, "service_tier"},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":1}`, "service_tier"},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"default","SERVICE_TIER":"priority"}`, "service_tier"},
		{"/v1/responses", `{"model":"doubao","service_tier":"priority"}`, "service_tier"},
		{"/v1/messages", `{"model":"doubao","inference_geo":"us"}`, "inference_geo"},
		{"/v1/messages", `{"model":"doubao","speed":"fast"}`, "speed"},
		{"/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"doubao","max_tokens":5,"inference_geo":"us"}}]}`, "requests[0].params.inference_geo"},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"service_tier":"priority"}`, "service_tier"},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"serviceTier":"PRIORITY"}`, "serviceTier"},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"auto"}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"flex"}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":"default"}`, ""},
		{"/v1/chat/completions", `{"model":"doubao","service_tier":null}`, ""},
		{"/v1/messages", `{"model":"doubao","service_tier":"standard_only","inference_geo":"global","speed":"standard"}`, ""},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"service_tier":"flex"}`, ""},
		// @google/genai sends its enum's ServiceTier.UNSPECIFIED as written; the API's own names.
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"serviceTier":"unspecified"}`, ""},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"serviceTier":"SERVICE_TIER_STANDARD"}`, ""},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"service_tier":"SERVICE_TIER_FLEX"}`, ""},
		{"/v1beta/models/gemini-pro:generateContent", `{"contents":[],"serviceTier":"SERVICE_TIER_PRIORITY"}`, "serviceTier"},
		{"/v1beta/models/gemini-pro:countTokens", `{"contents":[],"service_tier":"priority"}`, ""},
		// Speech's speed is its own (a number), not Anthropic's fast mode.
		{"/v1/audio/speech", `{"model":"doubao","input":"hi","voice":"alloy","speed":1.5}`, ""},
	} {
		checkRoute(t, rt, tc.path, tc.body, tc.param)
	}
}
