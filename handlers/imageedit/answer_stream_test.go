package imageedit

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/providers"
)

// streamUpstream is an upstream whose API key is key.
func streamUpstream(t *testing.T, key string) *providers.Upstream {
	t.Helper()
	base, _ := url.Parse("https://api.example.com/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: key, Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Provider("p")
	order, _ := p.Order("")
	return order[0]
}

// streamInPieces reads answer through an answerStream in pieces of size bytes, and returns what
// went on before its end, and the stream.
func streamInPieces(u *providers.Upstream, answer []byte, size int) ([]byte, *answerStream) {
	s := newAnswerStream(u)
	var out []byte
	for rest := answer; len(rest) > 0; {
		n := min(size, len(rest))
		out = append(out, s.next(rest[:n])...)
		rest = rest[n:]
	}
	return out, s
}

// TestAnswerStreamPassesAWholeAnswer: an answer that quotes no credential goes on byte for byte
// (what went on, then its held-back end), is whole, and its data items and status are read.
func TestAnswerStreamPassesAWholeAnswer(t *testing.T) {
	u := streamUpstream(t, "upstream-secret-0123456789")
	answer := []byte(`{"id":"t","status":"succeeded","data":[{"b64_json":"` + strings.Repeat("iVBO", 50_000) +
		`"},{"b64_json":"AAAA"}],"revised_prompt":"caf\u00e9 \"au lait\" \\ 100%","size":"1024x1024","quality":"low"}`)
	for _, size := range []int{1, 7, 4096, 1 << 20} {
		out, s := streamInPieces(u, answer, size)
		if !s.whole() || !bytes.Equal(append(out, s.held()...), answer) {
			t.Fatalf("pieces of %d: whole %v, %d bytes passed; want the answer's %d, whole", size, s.whole(), len(out)+len(s.held()), len(answer))
		}
		if n, _ := s.items.Count(); n != 2 || s.items.Status() != "succeeded" {
			t.Fatalf("pieces of %d: %d items, status %q", size, n, s.items.Status())
		}
	}
}

// TestAnswerStreamHoldsBackAQuotedCredential: an answer that quotes the upstream's key, as
// written, with JSON escapes or percent escapes, wherever the pieces split it, passes on nothing
// from where the key begins, and is not whole.
func TestAnswerStreamHoldsBackAQuotedCredential(t *testing.T) {
	const key = "upstream-secret-0123456789"
	u := streamUpstream(t, key)
	spellings := []string{key, `upstream\u002dsecret-0123456789`, `\u0075\u0070\u0073\u0074\u0072\u0065\u0061\u006d-secret-0123456789`,
		"upstream%2Dsecret-0123456789", `upstream\u00252Dsecret-0123456789`, `\\` + key}
	// The longest spellings (each byte a percent escape written with JSON escapes) after a run of
	// backslashes, which a search that began inside the run would read otherwise.
	for plain := range 4 {
		var b strings.Builder
		b.WriteString(strings.Repeat(`\\`, 20))
		for _, c := range []byte(key[:len(key)-plain]) {
			for _, e := range fmt.Sprintf("%%%02X", c) {
				fmt.Fprintf(&b, `\u%04x`, e)
			}
		}
		spellings = append(spellings, b.String()+key[len(key)-plain:])
	}
	for _, spelled := range spellings {
		head := `{"status":"succeeded","data":[{"b64_json":"` + strings.Repeat("iVBO", 20_000) + `"}],"debug":"Bearer `
		answer := []byte(head + spelled + `","more":"` + strings.Repeat("A", 50_000) + `"}`)
		for _, size := range []int{1, 3, 1000, 32 << 10} {
			out, s := streamInPieces(u, answer, size)
			if s.whole() || len(out) > len(head) {
				t.Fatalf("%s in pieces of %d: whole %v, %d bytes passed; want none from byte %d on", spelled, size, s.whole(), len(out), len(head))
			}
		}
	}
}

// TestAnswerStreamFindsAMalformedAnswer: an answer that is not one valid JSON text is not whole,
// however it ends.
func TestAnswerStreamFindsAMalformedAnswer(t *testing.T) {
	u := streamUpstream(t, "upstream-secret-0123456789")
	body := `{"status":"succeeded","data":[{"b64_json":"` + strings.Repeat("iVBO", 20_000) + `"}]`
	for _, answer := range []string{body, body + `,}`, body + `}}`, body + `} {}`, body + `,"a":tru}`} {
		if _, s := streamInPieces(u, []byte(answer), 4096); s.whole() {
			t.Fatalf("%q… read as whole", answer[len(answer)-12:])
		}
	}
}
