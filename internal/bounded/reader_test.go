package bounded

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

var errTooLarge = errors.New("too large")

// TestReader: a source of exactly the bound reads whole; one byte more fails with TooLarge,
// however the source splits its reads, and Exceeded says so; no byte past the bound is returned.
func TestReader(t *testing.T) {
	for _, tc := range []struct {
		size, bound int64
		tooLarge    bool
	}{{0, 1, false}, {0, 0, false}, {10, 10, false}, {11, 10, true}, {9 << 20, 8 << 20, true}, {100, 1 << 20, false}} {
		for name, src := range map[string]io.Reader{
			"whole": bytes.NewReader(make([]byte, tc.size)),
			"bytes": iotest.OneByteReader(bytes.NewReader(make([]byte, tc.size))),
			"eof":   iotest.DataErrReader(bytes.NewReader(make([]byte, tc.size))),
		} {
			b := &Reader{R: src, Left: tc.bound, TooLarge: errTooLarge}
			n, err := io.Copy(io.Discard, b)
			if tc.tooLarge != errors.Is(err, errTooLarge) || tc.tooLarge != b.Exceeded() || (!tc.tooLarge && (err != nil || n != tc.size)) || n > tc.bound {
				t.Errorf("%s source of %d bytes, bound %d: read %d, %v", name, tc.size, tc.bound, n, err)
			}
		}
	}
}
