package upstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader returns its data in reads of the sizes of sizes (cycled; 0 is an empty read
// without an error), and io.EOF with the last bytes when last is set.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
	last  bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = min(n, int(c.sizes[c.i%len(c.sizes)]))
		c.i++
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	if c.last && len(c.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// FuzzReadAnswer: readAnswer reads what io.ReadAll of the body bounded at MaxBody+1 read before
// it (the whole body, or errAnswerTooLarge past MaxBody), whatever length is declared and
// however the body comes in reads.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte("hello"), int64(5), []byte{1, 2}, false, uint32(0))
	f.Add([]byte(""), int64(-1), []byte{}, true, uint32(0))
	f.Add([]byte("abc"), int64(1), []byte{0, 3}, true, uint32(0))
	f.Add([]byte("x"), int64(MaxBody), []byte{7}, false, uint32(MaxBody))
	f.Fuzz(func(t *testing.T, data []byte, declared int64, sizes []byte, last bool, pad uint32) {
		if len(sizes) > 0 && bytes.Count(sizes, []byte{0}) == len(sizes) {
			return // only empty reads: neither reader ever ends
		}
		body := data
		if pad%(MaxBody+2) >= MaxBody-64 { // bodies near and past the bound
			body = append(bytes.Repeat([]byte{'p'}, int(pad%(MaxBody+2))), data...)
		}
		want, werr := io.ReadAll(io.LimitReader(&chunkReader{data: body, sizes: sizes, last: last}, MaxBody+1))
		if werr == nil && len(want) > MaxBody {
			werr = errAnswerTooLarge
		}
		got, gerr := readAnswer(&chunkReader{data: body, sizes: sizes, last: last}, declared, MaxBody, nil)
		if declared > MaxBody {
			if !errors.Is(gerr, errAnswerTooLarge) {
				t.Fatalf("declared %d past MaxBody: %v", declared, gerr)
			}
			return
		}
		if !errors.Is(gerr, werr) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("declared %d, %d bytes: readAnswer %d bytes, %v; io.ReadAll %d bytes, %v", declared, len(body), len(got), gerr, len(want), werr)
		}
	})
}
