package passthrough

import (
	"bytes"
	"testing"
)

// FuzzEventEnd checks eventEnd against its definition: the end of the first "\n\n" or
// "\r\n\r\n", whichever starts first.
func FuzzEventEnd(f *testing.F) {
	for _, s := range []string{"a\n\nb", "a\r\n\r\nb", "\r\n\n", "x\n\r\n\r\n", "\n", "", "a\r\n\r\n\n\n", "\n\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := -1
		lf, crlf := bytes.Index(b, []byte("\n\n")), bytes.Index(b, []byte("\r\n\r\n"))
		switch {
		case lf >= 0 && (crlf < 0 || lf < crlf):
			want = lf + 2
		case crlf >= 0:
			want = crlf + 4
		}
		if got := eventEnd(b); got != want {
			t.Fatalf("eventEnd(%q) = %d, want %d", b, got, want)
		}
	})
}
