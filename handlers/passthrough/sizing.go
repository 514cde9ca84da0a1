package passthrough

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// pricedFields are the top-level body fields a request's hold depends on. They are read under
// jsonkeys' rule like the model (no repeated key, no case variant), so that what the upstream
// reads is what was priced.
var pricedFields = append(append([]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "n", "quality",
	arkSequential, arkSequentialOptions}, videoPricedFields...), serviceFields...) // size among them, an image's as well as a video's

// Ark's Seedream makes a set of images for one request when its sequential_image_generation is
// "auto": up to sequential_image_generation_options.max_images of them (1 to 15; 15 when it
// names none), which n does not count.
const (
	arkSequential        = "sequential_image_generation"
	arkSequentialOptions = "sequential_image_generation_options"
	arkMaxImages         = 15
)

// sequentialImages is the most images an Ark image request's set may make: max_images (else 15)
// when its sequential_image_generation is "auto" (in any letter case), else 0.
func sequentialImages(fields *bodyFields) int64 {
	if mode, err := stringValue(fields.value(arkSequential)); err != nil || !strings.EqualFold(strings.TrimSpace(mode), "auto") {
		return 0
	}
	opts := fields.value(arkSequentialOptions)
	if len(opts) == 0 || opts[0] != '{' {
		return arkMaxImages
	}
	m, err := jsonkeys.MembersValid(opts, "max_images")
	if err != nil {
		return arkMaxImages
	}
	if n := numberOrString(m["max_images"]); n > 0 {
		return n
	}
	return arkMaxImages
}

// sizing is what a JSON request to ep says about how much it may use (see billing.Request).
// Fields of the wrong type are left to the upstream to refuse, and count as absent.
func sizing(ep Endpoint, fields *bodyFields, bodyBytes int) billing.Request {
	q := billing.Request{BodyBytes: int64(bodyBytes), Images: strings.HasPrefix(ep.Path, "/v1/images/"), InputOnly: ep.inputOnly}
	if ep.reranks {
		q.QueryBytes, q.Documents = rerankSizing(fields)
	}
	if createsVideo(ep) {
		q.Video = videoSizing(jsonVideoValue(fields))
		return q
	}
	// The largest output limit the body names: upstreams differ in which one they follow when
	// it names several (vLLM's chat takes max_completion_tokens before max_tokens), so a body
	// of max_tokens 1 and max_completion_tokens 100000 may be answered 100000 tokens.
	// A limit or n written as a string holding a number ("100000") counts as that number: an
	// upstream that coerces strings (pydantic's lax mode, vLLM's) reads it so.
	// A limit of zero or less names no bound (see unboundedLimit): the model's max_output is held
	// whatever the others say, and a stream's counted output is not cut at them.
	unbounded := false
	for _, name := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		raw := fields.value(name)
		q.MaxOutput = max(q.MaxOutput, numberOrString(raw))
		unbounded = unbounded || unboundedLimit(raw)
	}
	if unbounded {
		q.MaxOutput = 0
	}
	q.N = numberOrString(fields.value("n"))
	if legacyCompletion(ep) {
		q.N = timesPrompts(q.N, fields.value(promptField))
	}
	if q.Images {
		// A Seedream set is held at the most images it may make; it is charged those made.
		q.N = max(q.N, sequentialImages(fields))
	}
	q.ImageSize = stringOrEmpty(fields.value("size"))
	q.ImageQuality = stringOrEmpty(fields.value("quality"))
	return q
}

// promptField is a legacy completion's prompt: a string, or a list of prompts (see
// timesPrompts), read for its hold on that endpoint only (refFields).
const promptField = "prompt"

// legacyCompletion reports whether ep is a legacy completion (an added /v1/completions, or any
// path that ends in /completions but is no chat completion), whose prompt may be a list.
func legacyCompletion(ep Endpoint) bool {
	return strings.HasSuffix(ep.Path, "/completions") && !strings.HasSuffix(ep.Path, "/chat/completions")
}

// timesPrompts is n (0 counts as 1) times the number of prompts of a legacy completion's prompt
// member, which makes n completions of each: each string and each token list of a list is a
// prompt; a string, a list of tokens (numbers) or anything else is one. A count past int64
// saturates (the estimate then saturates too).
func timesPrompts(n int64, prompt json.RawMessage) int64 {
	elements, _ := jsonkeys.ElementsValid(prompt) // none when prompt is no list
	prompts := int64(0)
	for _, e := range elements {
		if len(e) > 0 && (e[0] == '"' || e[0] == '[') {
			prompts++
		}
	}
	if prompts < 2 {
		return n
	}
	n = max(n, 1)
	if n > math.MaxInt64/prompts {
		return math.MaxInt64
	}
	return n * prompts
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
	return positiveInt(numberText(raw))
}

// numberText is raw, or, when raw is a JSON string, its content as numberOrString reads it (nil
// when that is empty or the string does not decode).
func numberText(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	s = strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), "+") // pydantic takes "+5"
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// unboundedLimit reports whether raw, an output limit (max_tokens, max_completion_tokens,
// max_output_tokens, maxOutputTokens), is a number of zero or less, or a string holding one. The
// gateway passes such a body on untouched (OpenAI and Anthropic refuse it with their own 400),
// but some OpenAI-compatible servers read it as no limit at all (llama.cpp's -1 is "infinity"),
// and one that takes it before a positive limit beside it (vLLM takes max_completion_tokens
// before max_tokens) may answer far more than that limit: the request names no bound, and is
// held the model's max_output.
func unboundedLimit(raw json.RawMessage) bool {
	text := numberText(raw)
	if len(text) == 0 {
		return false
	}
	if text[0] == '-' {
		return json.Valid(text) // JSON that starts with '-' is a negative number
	}
	n, ok := jsonkeys.Integer(text)
	return ok && n == 0
}

// positiveNumber is positiveInt for any JSON number: raw as a positive integer, or 0. A whole
// number counts however it is written (10.0, 1e1: jsonkeys.Integer), since JSON has one kind of
// number and an upstream that does not tell integers from floats reads it so: n 10.0 asks such
// an upstream for 10 images, and is held for 10. For the same reason a number counts as the
// most generous common decoder reads it, a float64: 10.0000000000000001, which is no whole
// number read exactly, is 10.0 to JSON.parse, Python's json and pydantic's lax int, and counts
// as 10; one past an int64 counts as the largest (no balance covers its hold).
func positiveNumber(raw json.RawMessage) int64 {
	if n, ok := jsonkeys.Integer(raw); ok {
		return max(n, 0)
	}
	f, err := strconv.ParseFloat(strings.Trim(string(raw), " \t\n\r"), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) && err == nil || !(f >= 1) || f != math.Trunc(f) {
		return 0 // not a number, an Inf written out (no JSON number), a fraction, or below 1
	}
	if f >= math.MaxInt64 { // 2^63 as a float64, and an overflow's +Inf
		return math.MaxInt64
	}
	return int64(f)
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

// rerankFields are the members of a rerank's body that bound its input: its query, and the
// documents ranked against it (Cohere's, Jina's, Voyage's and DashScope's compatible rerank).
var rerankFields = []string{"query", "documents"}

// rerankSizing is the length of a rerank's query (its JSON value's bytes, whatever its type: a
// string, or a multimodal reranker's object) and the number of its documents (the elements of its
// documents array; 0 when it is not one), from which billing holds the query once per document.
func rerankSizing(fields *bodyFields) (queryBytes, documents int64) {
	if raw := fields.value("documents"); len(raw) > 0 && raw[0] == '[' {
		if elements, ok := jsonkeys.ElementsValid(raw); ok {
			documents = int64(len(elements))
		}
	}
	return int64(len(fields.value("query"))), documents
}
