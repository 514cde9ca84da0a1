package passthrough

import (
	"testing"
)

// eventEndByLines is eventEnd written plainly from the SSE rule, one byte at a time: lines end
// with "\r\n", "\n" or "\r", and an event ends with the line end of the first empty line that
// follows a line end.
func eventEndByLines(b []byte) int {
	lineStart, ended := 0, false
	for i := 0; i < len(b); {
		if b[i] != '\r' && b[i] != '\n' {
			i++
			continue
		}
		end := i + 1
		if b[i] == '\r' && end < len(b) && b[end] == '\n' {
			end++
		}
		if ended && i == lineStart {
			return end
		}
		ended, lineStart, i = true, end, end
	}
	return -1
}

func TestEventEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"a\n\nb", 3}, {"a\r\n\r\nb", 5}, {"a\n\r\nb", 4}, {"a\r\n\nb", 4}, {"a\r\rb", 3},
		{"a\r\r\nb", 4}, {"a\n\rb", 3}, {"a\rb\r\r", 5}, {"a\r\n\r", 4}, {"\n\n", 2},
		{"a\r", -1}, {"a\r\n", -1}, {"a\nb\nc", -1}, {"", -1}, {"\n", -1}, {"data: x\r\ndata: y\n\n", 18},
	} {
		if got := eventEnd([]byte(tc.in)); got != tc.want {
			t.Errorf("eventEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzEventEnd checks eventEnd against eventEndByLines, and what CreatedWriter relies on when
// bytes come in several writes: once the first k bytes hold no end, a search from 3 bytes before
// k (a separator is at most 4 bytes) finds the end that a search of the whole finds.
func FuzzEventEnd(f *testing.F) {
	for _, s := range []string{"a\n\nb", "a\r\n\r\nb", "\r\n\n", "x\n\r\n\r\n", "\n", "", "a\r\n\r\n\n\n", "\n\r\n\r\n", "a\r\rb", "a\rb\r\n\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := eventEndByLines(b)
		if got := eventEnd(b); got != want {
			t.Fatalf("eventEnd(%q) = %d, want %d", b, got, want)
		}
		for k := range len(b) {
			if eventEnd(b[:k]) >= 0 {
				break
			}
			from := max(k-3, 0)
			got := eventEnd(b[from:])
			if got >= 0 {
				got += from
			}
			if got != want {
				t.Fatalf("eventEnd(%q) after %d bytes without an end, from %d = %d, want %d", b, k, from, got, want)
			}
		}
	})
}
