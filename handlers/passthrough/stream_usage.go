package passthrough

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// The body members that say whether a request asks for a streamed answer, read (and checked by
// jsonkeys' rule) in every JSON body: see modelAndPriced.
const (
	streamField        = "stream"
	streamOptionsField = "stream_options"
)

var (
	errStreamType        = apierror.New(http.StatusBadRequest, "invalid_request_body", "stream must be true or false").WithParam(streamField)
	errStreamOptionsType = apierror.New(http.StatusBadRequest, "invalid_request_body", "stream_options must be an object").WithParam(streamOptionsField)
)

// asksStream reports whether a JSON body's stream member is true: the answer is an event
// stream (a chat completion, a Responses create, a Messages call). A stream member that is not a
// boolean (null counts as absent) is refused on every endpoint, as OpenAI refuses it: a lax
// upstream would read "true" as a stream that the gateway did not see asked for, and would not
// read on for its usage when its client leaves.
func asksStream(fields *bodyFields) (bool, error) {
	switch string(bytes.TrimSpace(fields.value(streamField))) {
	case "true":
		return true, nil
	case "", "null", "false":
		return false, nil
	}
	return false, errStreamType
}

// streamsByPath reports whether ep's answer is a stream whatever its body says (Gemini's
// streamGenerateContent).
func streamsByPath(ep Endpoint) bool { return strings.HasSuffix(ep.Path, ":streamGenerateContent") }

// reportsStreamUsageOnRequest reports whether ep is one of OpenAI's completions, whose stream
// reports its usage only when the request sets stream_options.include_usage: a chat completion
// (the built-in /v1/chat/completions, and an added endpoint whose path ends so) and a legacy
// completion (an added /v1/completions, whose reference takes the same stream_options). The other
// protocols' streams always report it: Anthropic's message_delta event, Gemini's usageMetadata of
// its last chunk, Responses' response.completed.
func reportsStreamUsageOnRequest(ep Endpoint) bool {
	return strings.HasSuffix(ep.Path, "/completions")
}

// streamAsked reads whether a JSON body of ep (its model in the body, or in an added endpoint's
// {model} path segment) asks for a stream (asksStream) and, for a streamed completion, the
// stream_options that ask for its usage (askUsage), into route (a stream by its path stays one).
func streamAsked(ep Endpoint, fields *bodyFields, route *Route) error {
	streams, err := asksStream(fields)
	if err != nil {
		return err
	}
	route.Streams = route.Streams || streams
	route.streamOptions, err = askUsage(ep, fields, streams)
	return err
}

// askUsage reads what a JSON body of ep asks of its stream: for a streamed completion
// (reportsStreamUsageOnRequest), the stream_options that ask for its usage (optionsWithUsage),
// which dispatch sends unless the provider omits them (streamWithUsage); nil for any other body.
// A stream_options that is not an object (or null) beside "stream": true is refused.
func askUsage(ep Endpoint, fields *bodyFields, streams bool) (json.RawMessage, error) {
	if !streams || !reportsStreamUsageOnRequest(ep) {
		return nil, nil
	}
	return optionsWithUsage(fields.value(streamOptionsField))
}

// streamWithUsage makes a streamed completion's body ask for its usage: its stream_options
// member made options (see askUsage), or added as its last member when it has none
// (jsonkeys.SetMember). Every other byte is the client's, as checked; a body whose
// stream_options already is options is sent as it is, not copied. The stream then ends with a
// chunk of the usage that the provider bills, which the gateway charges, instead of only the
// deltas that it counts (a reasoning model's tokens are billed and never streamed).
func streamWithUsage(r *http.Request, options json.RawMessage) error {
	body, err := replayedBytes(r)
	if err != nil {
		return err
	}
	out, err := jsonkeys.SetMember(body, streamOptionsField, options, jsonkeys.MemberEdit{Add: true})
	if err != nil {
		return errBadJSON // jsonFields read it as an object
	}
	if len(out) != len(body) || len(out) > 0 && &out[0] != &body[0] {
		setBody(r, out)
	}
	return nil
}

// includeUsage is the stream_options of a request that named none.
var includeUsage = json.RawMessage(`{"include_usage":true}`)

// includeUsageField is the member of stream_options that asks for the usage.
var includeUsageField = []string{"include_usage"}

// optionsWithUsage is the stream_options value raw (nil when absent) with include_usage true:
// its other members as they were, every member named include_usage in any letter case left
// out (decoders differ on which of several counts), and "include_usage":true last. Raw itself
// when it has one include_usage, spelled so, already true (what the SDKs send when asked).
func optionsWithUsage(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if raw == nil || string(raw) == "null" {
		return includeUsage, nil
	}
	var usage [1]json.RawMessage
	switch err := jsonkeys.MembersOf(raw, includeUsageField, usage[:]); {
	case err == jsonkeys.ErrNotObject:
		return nil, errStreamOptionsType
	case err == nil && string(usage[0]) == "true":
		return raw, nil // include_usage is true, once and spelled so: the value is right as it is
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errStreamOptionsType
	}
	out := []byte{'{'}
	for dec.More() {
		key, value, err := nextMember(dec)
		if err != nil {
			return nil, errStreamOptionsType
		}
		if !strings.EqualFold(key, "include_usage") {
			out = appendMember(out, key, value)
		}
	}
	return append(appendMember(out, "include_usage", json.RawMessage("true")), '}'), nil
}

// nextMember reads the next key and raw value of the object dec is in.
func nextMember(dec *json.Decoder) (string, json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", nil, err
	}
	key, _ := tok.(string)
	var raw json.RawMessage
	err = dec.Decode(&raw)
	return key, raw, err
}

// appendMember appends the member key:value to out, the inside of an object being written
// (a comma first unless it is the object's first member).
func appendMember(out []byte, key string, value json.RawMessage) []byte {
	if out[len(out)-1] != '{' {
		out = append(out, ',')
	}
	quoted, _ := json.Marshal(key) // a string always encodes
	out = append(out, quoted...)
	out = append(out, ':')
	return append(out, value...)
}
