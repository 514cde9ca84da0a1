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

// FuzzReadAnswerHeld: read into a hold of a budget of room bytes, readAnswer reads what it reads
// without one whenever its buffers fit the budget, and errAnswerBusy otherwise; the budget never
// holds more than its bound, holds at least the bytes read, and is empty once the hold is
// released.
func FuzzReadAnswerHeld(f *testing.F) {
	f.Add([]byte("hello"), int64(5), []byte{1, 2}, uint32(3))
	f.Add(bytes.Repeat([]byte("x"), 3000), int64(-1), []byte{200}, uint32(2048))
	f.Add(bytes.Repeat([]byte("y"), 70000), int64(70000), []byte{}, uint32(1<<17))
	f.Fuzz(func(t *testing.T, data []byte, declared int64, sizes []byte, room uint32) {
		if len(sizes) > 0 && bytes.Count(sizes, []byte{0}) == len(sizes) {
			return
		}
		want, werr := readAnswer(&chunkReader{data: data, sizes: sizes, last: true}, declared, MaxBody, nil)
		limit := int64(room%(1<<18)) + 1
		budget := NewAnswerBudget(limit, limit)
		hold := &AnswerHold{budget: budget}
		got, gerr := readAnswer(&chunkReader{data: data, sizes: sizes, last: true}, declared, MaxBody, hold)
		if budget.Held() > budget.Limit() {
			t.Fatalf("%d held past the budget of %d", budget.Held(), budget.Limit())
		}
		switch {
		case errors.Is(gerr, errAnswerBusy):
			// Of unknown length, an answer is read into buffers of 512 bytes, doubled as they
			// fill: one whose last buffer fits the budget is never refused.
			need := int64(512)
			for need < int64(len(want)) {
				need *= 2
			}
			if werr == nil && declared < 0 && need <= budget.Limit() {
				t.Fatalf("a %d-byte answer (a buffer of %d) found no room in a budget of %d", len(want), need, budget.Limit())
			}
		case !errors.Is(gerr, werr) || !bytes.Equal(got, want):
			t.Fatalf("held read: %d bytes, %v; unheld: %d bytes, %v", len(got), gerr, len(want), werr)
		case gerr == nil && budget.Held() < int64(len(got)):
			t.Fatalf("%d bytes read, %d held", len(got), budget.Held())
		}
		hold.Release()
		if budget.Held() != 0 {
			t.Fatalf("%d held after release", budget.Held())
		}
	})
}
