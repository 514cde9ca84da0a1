// Package bounded reads a stream of at most a given number of bytes.
package bounded

import "io"

// Reader reads R to its end, or fails with TooLarge once R has more than Left bytes. It reads
// no byte past the bound into the caller's buffer: to tell a stream that ends exactly at the
// bound from a longer one, it reads one byte more, which it never returns.
type Reader struct {
	R        io.Reader
	Left     int64
	TooLarge error
	exceeded bool
}

// Exceeded reports whether R was found longer than the bound: for a caller whose reader of the
// stream (a multipart reader, say) may hide the TooLarge error behind its own.
func (b *Reader) Exceeded() bool { return b.exceeded }

func (b *Reader) Read(p []byte) (int, error) {
	if b.Left <= 0 {
		var probe [1]byte
		n, err := b.R.Read(probe[:])
		if n > 0 {
			b.exceeded = true
			return 0, b.TooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.Left {
		p = p[:b.Left]
	}
	n, err := b.R.Read(p)
	b.Left -= int64(n)
	return n, err
}
