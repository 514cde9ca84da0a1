package videotask

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// marshalAnswer writes the same bytes as apierror.Marshal, and fails where it fails.
func TestMarshalAnswerIsApierrorMarshal(t *testing.T) {
	for _, m := range []map[string]json.RawMessage{
		{},
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`), "error": json.RawMessage("null"),
			"content": json.RawMessage(`{ "video_url" : "https://x.example/a?b=1&c=<2>" }`), "created_at": json.RawMessage("1"),
			"usage": json.RawMessage("{\n\t\"total_tokens\": 108900\n}"), "list": json.RawMessage(`[ 1, 2 ,"\u2028" ]`)},
		{"nil": nil, "b": json.RawMessage(`true`)},
		{"quo\"te": json.RawMessage(`1`), "a": json.RawMessage(`2`)},
		{"back\\slash": json.RawMessage(`1`)},
		{"<html>&": json.RawMessage(`"<&>"`)},
		{"ünï": json.RawMessage(`1`), "ctl\x01": json.RawMessage(`2`), "line\u2028sep": json.RawMessage(`3`)},
		{"bad": json.RawMessage(`{"a":`)},
		{"empty": json.RawMessage{}},
		{"two": json.RawMessage(`1 2`)},
	} {
		want, wantErr := apierror.Marshal(m)
		got, err := marshalAnswer(m)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("marshalAnswer(%v) = %s, %v; apierror.Marshal: %s, %v", m, got, err, want, wantErr)
		}
	}
}

func FuzzMarshalAnswer(f *testing.F) {
	f.Add("status", []byte(`"queued"`), "content", []byte(`{ "a": [1, "x"] }`))
	f.Add("k\"", []byte(`null`), "\u2028", []byte(`"\u2028"`))
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte) {
		m := map[string]json.RawMessage{k1: v1, k2: v2}
		want, wantErr := apierror.Marshal(m)
		got, err := marshalAnswer(m)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("marshalAnswer(%q) = %s, %v; apierror.Marshal: %s, %v", m, got, err, want, wantErr)
		}
	})
}

// The watcher encodes a query answer for every task it finds changed.
//
//	go test ./handlers/videotask/ -run '^$' -bench MarshalAnswer -benchmem
func BenchmarkMarshalAnswer(b *testing.B) {
	answer := map[string]json.RawMessage{"id": json.RawMessage(`"cgt-20261122-abcdefgh"`), "model": json.RawMessage(`"bench-video"`),
		"status": json.RawMessage(`"queued"`), "error": json.RawMessage("null"), "content": json.RawMessage("{}"),
		"created_at": json.RawMessage("1763800000"), "updated_at": json.RawMessage("1763800000"),
		"service_tier": json.RawMessage(`"default"`), "execution_expires_after": json.RawMessage("172800")}
	for _, enc := range []struct {
		name string
		fn   func(map[string]json.RawMessage) ([]byte, error)
	}{{"marshalAnswer", marshalAnswer}, {"apierror.Marshal", func(m map[string]json.RawMessage) ([]byte, error) { return apierror.Marshal(m) }}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.fn(answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// quoted is json.Marshal of a string; unquoted is json.Unmarshal into one ("" when it fails).
func TestQuotedAndUnquoted(t *testing.T) {
	for _, s := range []string{"", "cgt-1", "a<b>&c", `q"b\`, "ctl\x01", "ünï", "\u2028", "bad\xff"} {
		if got, want := quoted(s), mustJSON(s); !bytes.Equal(got, want) {
			t.Errorf("quoted(%q) = %s, want %s", s, got, want)
		}
	}
	for _, raw := range []string{`"queued"`, `"Running"`, `"a\"b"`, `"\u0071ueued"`, `"bad` + "\xff" + `"`, `""`, `null`, `1`, `{}`, `"`, ``, ` "queued" `} {
		var want string
		if json.Unmarshal([]byte(raw), &want) != nil {
			want = ""
		}
		if got := unquoted(json.RawMessage(raw)); got != want {
			t.Errorf("unquoted(%s) = %q, want %q", raw, got, want)
		}
	}
}
