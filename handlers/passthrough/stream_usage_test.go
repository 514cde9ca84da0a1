package passthrough

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// TestStreamWithUsage: a streamed completion's body (chat, or legacy) is sent on with
// stream_options.include_usage true, the member's value spliced in (added last when absent) and
// every other byte as the client sent it; a body that already asks so, or does not stream, is
// sent as it is, not copied; a stream that is not a boolean, or stream_options that is not an
// object, is refused.
func TestStreamWithUsage(t *testing.T) {
	for _, c := range []struct{ path, body, want, refused string }{
		{body: `{"model":"m","stream":true}`, want: `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{path: "/v1/completions", body: `{"model":"m","prompt":"hi","stream":true}`, want: `{"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true}}`},
		{path: "/v1/embeddings", body: `{"model":"m","stream":true}`, want: `{"model":"m","stream":true}`},
		{body: ` { "stream" : true , "model":"m", "n": 1.50 } `, want: ` { "stream" : true , "model":"m", "n": 1.50,"stream_options":{"include_usage":true} } `},
		{body: `{}`, want: `{}`},
		{body: `{"stream":true,"stream_options":null,"model":"m"}`, want: `{"stream":true,"stream_options":{"include_usage":true},"model":"m"}`},
		{body: `{"stream":true,"stream_options" : {"include_usage":false,"x":[1, 2]} }`, want: `{"stream":true,"stream_options" : {"x":[1, 2],"include_usage":true} }`},
		{body: `{"stream":true,"stream_options":{"Include_Usage":false,"include_usage":true}}`, want: `{"stream":true,"stream_options":{"include_usage":true}}`},
		{body: `{"stream":true,"stream_options":{}}`, want: `{"stream":true,"stream_options":{"include_usage":true}}`},
		{body: `{"model":"<m>","stream":true,"a\u0062":"\u00e9"}`, want: `{"model":"<m>","stream":true,"a\u0062":"\u00e9","stream_options":{"include_usage":true}}`},
		{body: `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, want: `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{body: `{"model":"m","stream":false,"stream_options":"any"}`, want: `{"model":"m","stream":false,"stream_options":"any"}`},
		{body: `{"model":"m","stream":null}`, want: `{"model":"m","stream":null}`},
		{body: `{"model":"m"}`, want: `{"model":"m"}`},
		{body: `{"model":"m","stream":"true"}`, refused: "stream"},
		{body: `{"model":"m","stream":1}`, refused: "stream"},
		{body: `{"model":"m","stream":true,"stream_options":"yes"}`, refused: "stream_options"},
		{body: `{"model":"m","stream":true,"stream_options":[]}`, refused: "stream_options"},
	} {
		path := cmp.Or(c.path, "/v1/chat/completions")
		body := []byte(c.body)
		r := httptest.NewRequest("POST", path, nil)
		setBody(r, body)
		var fields bodyFields
		if err := fields.read(body, modelAndPriced); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		streams, err := asksStream(&fields) // as findModel reads it first
		var options json.RawMessage
		if err == nil {
			options, err = askUsage(Endpoint{Path: path}, &fields, streams)
		}
		if c.refused != "" {
			if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Status != 400 || e.Param != c.refused {
				t.Errorf("%s: %v, want a 400 of %s", c.body, err, c.refused)
			}
			continue
		}
		if err == nil && options != nil {
			err = streamWithUsage(r, options) // as dispatch sends it
		}
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		sent, err := replayedBytes(r)
		if err != nil || string(sent) != c.want || r.ContentLength != int64(len(c.want)) {
			t.Errorf("%s: sent %s (length %d), want %s", c.body, sent, r.ContentLength, c.want)
		}
		if c.body == c.want && &sent[0] != &body[0] {
			t.Errorf("%s: the body was copied, though nothing in it changed", c.body)
		}
	}
}

// TestStreamOptionsSplicedOnlyOnce: the member spliced is the only one an upstream can read as
// stream_options: a body that repeats it, spells it in another case or escapes a second one is
// refused by jsonkeys' rule before anything is spliced.
func TestStreamOptionsSplicedOnlyOnce(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","stream":true,"stream_options":{},"stream_options":{"include_usage":false}}`,
		`{"model":"m","stream":true,"Stream_Options":{"include_usage":false}}`,
		`{"model":"m","stream":true,"stream_options":{},"stream\u005foptions":{"include_usage":false}}`,
	} {
		var fields bodyFields
		err := fields.read([]byte(body), modelAndPriced)
		if e, ok := errors.AsType[*jsonkeys.Error](err); !ok || e.Field != streamOptionsField {
			t.Errorf("%s: %v, want stream_options refused", body, err)
		}
	}
}

// TestStreamsAsked: a JSON body streams when its stream member is true; Gemini's
// streamGenerateContent always does.
func TestStreamsAsked(t *testing.T) {
	for body, want := range map[string]bool{`{"stream":true}`: true, `{"stream": true }`: true, `{"stream":false}`: false, `{}`: false, `{"stream":null}`: false} {
		var fields bodyFields
		if err := fields.read([]byte(body), modelAndPriced); err != nil {
			t.Fatal(err)
		}
		if got, err := asksStream(&fields); got != want || err != nil {
			t.Errorf("%s: %v, %v; want %v", body, got, err, want)
		}
	}
	// Not a boolean: refused on every endpoint (a lax upstream would stream "true").
	for _, body := range []string{`{"stream":"true"}`, `{"stream":1}`, `{"stream":{}}`} {
		var fields bodyFields
		if err := fields.read([]byte(body), modelAndPriced); err != nil {
			t.Fatal(err)
		}
		if _, err := asksStream(&fields); err != errStreamType {
			t.Errorf("%s: %v, want errStreamType", body, err)
		}
	}
	if !streamsByPath(Endpoint{Path: "/v1beta/models/{model}:streamGenerateContent"}) || streamsByPath(Endpoint{Path: "/v1beta/models/{model}:generateContent"}) {
		t.Error("streamGenerateContent is a stream, generateContent is not")
	}
}
