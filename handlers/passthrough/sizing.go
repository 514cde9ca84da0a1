package passthrough

import (
	"encoding/json"
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// pricedFields are the top-level body fields a request's hold depends on. They are read under
// jsonkeys' rule like the model (no repeated key, no case variant), so that what the upstream
// reads is what was priced.
var pricedFields = append([]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "n", "quality"},
	videoPricedFields...) // size among them, an image's as well as a video's

// sizing is what a JSON request to ep says about how much it may use (see billing.Request).
// Fields of the wrong type are left to the upstream to refuse, and count as absent.
func sizing(ep Endpoint, fields *bodyFields, bodyBytes int) billing.Request {
	q := billing.Request{BodyBytes: int64(bodyBytes), Images: strings.HasPrefix(ep.Path, "/v1/images/")}
	if createsVideo(ep) {
		q.Video = videoSizing(jsonVideoValue(fields))
		return q
	}
	// The largest output limit the body names: upstreams differ in which one they follow when
	// it names several (vLLM's chat takes max_completion_tokens before max_tokens), so a body
	// of max_tokens 1 and max_completion_tokens 100000 may be answered 100000 tokens.
	// A limit or n written as a string holding a number ("100000") counts as that number: an
	// upstream that coerces strings (pydantic's lax mode, vLLM's) reads it so.
	for _, name := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		q.MaxOutput = max(q.MaxOutput, numberOrString(fields.value(name)))
	}
	q.N = numberOrString(fields.value("n"))
	q.ImageSize = stringOrEmpty(fields.value("size"))
	q.ImageQuality = stringOrEmpty(fields.value("quality"))
	return q
}

// positiveInt is raw as a positive integer, or 0. A field that is absent (the usual case)
// or a plain run of digits is read without encoding/json.
func positiveInt(raw json.RawMessage) int64 {
	if raw == nil {
		return 0
	}
	if len(raw) <= 18 { // 18 digits cannot overflow an int64
		var n int64
		for _, c := range raw {
			if c < '0' || c > '9' {
				return positiveNumber(raw)
			}
			n = n*10 + int64(c-'0')
		}
		return n
	}
	return positiveNumber(raw)
}

// numberOrString is raw as positiveInt reads it, or, when raw is a JSON string, its content so
// read, decoded, without surrounding white space, underscores or a plus sign ("100000",
// " 100_000 ", "+100000" and "\u0031\u0030" are numbers): an upstream that coerces strings to
// integers (pydantic's lax mode, as vLLM's; protobuf JSON) reads it as that number.
func numberOrString(raw json.RawMessage) int64 {
	if len(raw) == 0 || raw[0] != '"' {
		return positiveInt(raw)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	s = strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), "+") // pydantic takes "+5"
	if s == "" {
		return 0
	}
	return positiveInt(json.RawMessage(s))
}

// positiveNumber is positiveInt for any JSON number: raw as a positive integer, or 0. A whole
// number counts however it is written (10.0, 1e1: jsonkeys.Integer), since JSON has one kind of
// number and an upstream that does not tell integers from floats reads it so: n 10.0 asks such
// an upstream for 10 images, and is held for 10.
func positiveNumber(raw json.RawMessage) int64 {
	n, ok := jsonkeys.Integer(raw)
	if !ok || n < 0 {
		return 0
	}
	return n
}

// stringOrEmpty is raw as a string, or "" when it is absent or not a string.
func stringOrEmpty(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	s, err := stringValue(raw)
	if err != nil {
		return ""
	}
	return s
}
