package passthrough

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
)

// A stream whose lines end with a lone "\r", or whose blank line ends otherwise than its lines
// ("\n" then "\r\n", "\r\n" then "\n", "\n" then "\r"), is read event by event as SSE defines it:
// the response and its items are recorded, the terminal event reaches the client only after
// them, and the bytes pass unchanged, whether the stream comes whole or byte by byte.
func TestStreamsWithEveryLineEndAreRead(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	create := Route{Model: "doubao", Provider: p, Creates: KindResponse, RevealsItems: true}
	stream := func(lineEnd, blank, suffix string) string {
		var b strings.Builder
		for _, e := range []string{
			`{"type":"response.created","response":{"id":"resp_` + suffix + `","status":"in_progress","output":[]}}`,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_` + suffix + `","summary":[]}}`,
			`{"type":"response.output_text.delta","item_id":"msg_` + suffix + `","delta":"x"}`,
			`{"type":"response.completed","response":{"id":"resp_` + suffix + `","status":"completed","output":[{"id":"rs_` + suffix + `"},{"id":"msg_` + suffix + `"}]}}`,
		} {
			var v struct{ Type string }
			if err := json.Unmarshal([]byte(e), &v); err != nil {
				t.Fatal(err)
			}
			b.WriteString("event: " + v.Type + lineEnd + "data: " + e + lineEnd + blank)
		}
		return b.String()
	}
	n := 0
	for _, tc := range []struct{ name, lineEnd, blank string }{
		{"lone CR", "\r", "\r"},
		{"LF, then a CRLF blank line", "\n", "\r\n"},
		{"CRLF, then an LF blank line", "\r\n", "\n"},
		{"LF, then a CR blank line", "\n", "\r"},
	} {
		for _, byteByByte := range []bool{false, true} {
			n++
			suffix := strings.Repeat("z", n)
			whole := stream(tc.lineEnd, tc.blank, suffix)
			w := httptest.NewRecorder()
			cw := rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, create)
			seen := claimsSeen(cw, w)
			cw.Header().Set("Content-Type", "text/event-stream")
			cw.WriteHeader(200)
			chunks := []string{whole}
			if byteByByte {
				chunks = strings.Split(whole, "")
			}
			for _, c := range chunks {
				if _, err := cw.Write([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			// The terminal event is held until the end of the stream only where its blank line
			// cannot be told complete; here every event ends before the stream does.
			if !strings.Contains(w.Body.String(), "response.output_text.delta") {
				t.Fatalf("%s (byte by byte %v): events held back: %q", tc.name, byteByByte, w.Body)
			}
			cw.Finish()
			if w.Body.String() != whole {
				t.Fatalf("%s: stream changed: %q", tc.name, w.Body)
			}
			if len(*seen) != 1 || strings.Contains((*seen)[0], "response.completed") {
				t.Fatalf("%s (byte by byte %v): %d claims; the client had %q at the first", tc.name, byteByByte, len(*seen), *seen)
			}
			for _, id := range []string{"rs_" + suffix, "msg_" + suffix} {
				if got := itemOwner(t, store, id); got != "acme" {
					t.Fatalf("%s (byte by byte %v): item %s owned by %q", tc.name, byteByByte, id, got)
				}
			}
			if rec, err := store.Task(t.Context(), "resp_"+suffix); err != nil || rec.Account != "acme" {
				t.Fatalf("%s (byte by byte %v): response record %+v, %v", tc.name, byteByByte, rec, err)
			}
		}
	}
}
