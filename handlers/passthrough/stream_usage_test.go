package passthrough

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// TestStreamWithUsage: a streamed chat body is sent on with stream_options.include_usage true,
// its members re-encoded in their order with their values as sent; a body that does not stream
// is left as it is; a stream that is not a boolean, or stream_options that is not an object,
// is refused.
func TestStreamWithUsage(t *testing.T) {
	for _, c := range []struct{ body, want, refused string }{
		{body: `{"model":"m","stream":true}`, want: `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{body: ` { "stream" : true , "model":"m", "n": 1.50 } `, want: `{"stream":true,"model":"m","n":1.50,"stream_options":{"include_usage":true}}`},
		{body: `{"stream":true,"stream_options":null,"model":"m"}`, want: `{"stream":true,"stream_options":{"include_usage":true},"model":"m"}`},
		{body: `{"stream":true,"stream_options":{"include_usage":false,"x":[1, 2]}}`, want: `{"stream":true,"stream_options":{"x":[1, 2],"include_usage":true}}`},
		{body: `{"stream":true,"stream_options":{"Include_Usage":false,"include_usage":false}}`, want: `{"stream":true,"stream_options":{"include_usage":true}}`},
		{body: `{"stream":true,"stream_options":{}}`, want: `{"stream":true,"stream_options":{"include_usage":true}}`},
		{body: `{"model":"<m>","stream":true,"a\u0062":"\u00e9"}`, want: `{"model":"<m>","stream":true,"ab":"\u00e9","stream_options":{"include_usage":true}}`},
		{body: `{"model":"m","stream":false,"stream_options":"any"}`, want: `{"model":"m","stream":false,"stream_options":"any"}`},
		{body: `{"model":"m","stream":null}`, want: `{"model":"m","stream":null}`},
		{body: `{"model":"m"}`, want: `{"model":"m"}`},
		{body: `{"model":"m","stream":"true"}`, refused: "stream"},
		{body: `{"model":"m","stream":1}`, refused: "stream"},
		{body: `{"model":"m","stream":true,"stream_options":"yes"}`, refused: "stream_options"},
		{body: `{"model":"m","stream":true,"stream_options":[]}`, refused: "stream_options"},
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(c.body))
		var fields bodyFields
		if err := fields.read([]byte(c.body), modelAndPriced); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		streams, err := asksStream(&fields) // as findModel reads it first
		if err == nil {
			err = streamWithUsage(r, []byte(c.body), &fields, streams)
		}
		if c.refused != "" {
			if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Status != 400 || e.Param != c.refused {
				t.Errorf("%s: %v, want a 400 of %s", c.body, err, c.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		got, _ := io.ReadAll(r.Body)
		if string(got) != c.want {
			t.Errorf("%s: sent %s, want %s", c.body, got, c.want)
		}
		if r.GetBody == nil {
			continue // the body was left as it was
		}
		if again, _ := r.GetBody(); again != nil {
			if b, _ := io.ReadAll(again); string(b) != c.want || r.ContentLength != int64(len(c.want)) {
				t.Errorf("%s: replayed %s (length %d)", c.body, b, r.ContentLength)
			}
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
