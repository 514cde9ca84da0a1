package videotask

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseCreateForwardsTheTexts: the prompt that reaches the upstream is the one checked, as
// JSON decodes the client's text items (escapes, surrogates, \u0000, invalid bytes and all),
// whether ParseCreate read a text between its quotes or decoded it: one text item is forwarded
// as it came, several as one item holding them joined with a newline. A text that decodes to
// white space only is refused, and only such a one.
func FuzzParseCreateForwardsTheTexts(f *testing.F) {
	for _, s := range []string{
		body(""),
		body("", okText, `{"type":"text","text":"at \u0022dusk\""}`),
		body("", `{"type":"text","text":"\u0000"}`, `{"type":"text","text":"\ud800 \udc00 \ud83d\ude00"}`),
		body("", `{"type":"text","text":"   "}`),
		body("", `{"type":"text","text":"\u00a0"}`, okText),
		body("", `{"type":"te\u0078t","text":"a\tb"}`, `{"type":"text","text":"\u2028<&>"}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, ok := decodedTexts(b)
		if !ok {
			return
		}
		req, err := ParseCreate(b)
		blank := false
		for _, s := range in {
			blank = blank || strings.TrimSpace(s) == ""
		}
		if err != nil {
			if strings.Contains(err.Error(), ".text must not be empty") && !blank {
				t.Fatalf("%q refused as empty: its texts are %q", b, in)
			}
			return
		}
		if blank {
			t.Fatalf("%q accepted with a blank text among %q", b, in)
		}
		out, ok := decodedTexts(req.Forward)
		if !ok || len(out) != 1 || len(in) == 0 || out[0] != strings.Join(in, "\n") {
			t.Fatalf("%q (texts %q) forwarded as %q (texts %q)", b, in, req.Forward, out)
		}
	})
}

// decodedTexts are the texts of the text items of a create body's content as encoding/json
// decodes them; ok is false when the body does not decode so.
func decodedTexts(b []byte) (texts []string, ok bool) {
	var req struct {
		Content []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(b, &req) != nil {
		return nil, false
	}
	for _, item := range req.Content {
		if item.Type != "text" {
			continue
		}
		var s string
		if json.Unmarshal(item.Text, &s) != nil {
			return nil, false
		}
		texts = append(texts, s)
	}
	return texts, true
}
