package passthrough

import (
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// serviceFields are the body members in which a request asks its provider for a dearer way of
// serving it, which its price does not count: OpenAI's service_tier "priority" (Priority
// processing, billed at a premium per token) and "scale", the Gemini API's service_tier
// (serviceTier in the protocol's other spelling) "priority" (75% to 100% more than standard),
// Anthropic's inference_geo "us" (US-only inference, 1.1 times the token price) and its speed
// "fast" (fast mode, premium pricing). They are read under jsonkeys' rule with the priced fields
// (no repeated key, no case variant), and only the values listed in serviceValues may pass (see
// checkService). speed is read in a Messages body only: OpenAI's speech (POST /v1/audio/speech)
// takes a speed of its own, a number that costs nothing more.
var serviceFields = []string{"service_tier", "serviceTier", "inference_geo", "speed"}

// serviceValues are the values of each of serviceFields that a charged request may send, in any
// letter case: those that cost no more than the standard token price (the default, and the
// cheaper flex tier), in OpenAI's and the Gemini API's spellings (@google/genai sends its enum's
// unspecified, standard and flex as written; the API's own enum names are SERVICE_TIER_…).
// Absent and null pass too.
var serviceValues = map[string][]string{
	"service_tier":  {"auto", "default", "standard", "flex", "standard_only", "unspecified", "service_tier_unspecified", "service_tier_standard", "service_tier_flex"},
	"serviceTier":   {"auto", "default", "standard", "flex", "unspecified", "service_tier_unspecified", "service_tier_standard", "service_tier_flex"},
	"inference_geo": {"global"},
	"speed":         {"standard"},
}

// checkService refuses a charged request whose body asks for a way of serving it that costs
// more than its price counts (see serviceFields): 400 naming the field, rather than a request
// the provider bills at a premium and the gateway charges at its standard price.
// messages is set for a Messages body (speed is Anthropic's there).
func checkService(fields *bodyFields, messages bool) error {
	for _, name := range serviceFields {
		raw, ok := fields.get(name)
		if !ok || string(raw) == "null" || name == "speed" && !messages {
			continue
		}
		value, err := stringValue(raw)
		if err == nil && allowedService(serviceValues[name], value) {
			continue
		}
		return apierror.New(http.StatusBadRequest, "invalid_request_body",
			name+" may only be "+strings.Join(serviceValues[name], ", ")+" (or left out) here: the gateway charges the standard price, and the provider bills other values at a premium").WithParam(name)
	}
	return nil
}

func allowedService(allowed []string, value string) bool {
	for _, a := range allowed {
		if strings.EqualFold(value, a) {
			return true
		}
	}
	return false
}
