package providers

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// rewritten is the stream in as the client reads it through a ModelRewriter of limit bytes
// (MaxRewrittenEvent when 0), read whole and a byte at a time (each line end split from its line).
func rewritten(t *testing.T, in string, limit int) string {
	t.Helper()
	var got [2]string
	for i, src := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		m := NewModelRewriter(io.NopCloser(src), AnswerModels{Model: "client"})
		if limit > 0 {
			m.limit = limit
		}
		b, err := io.ReadAll(m)
		if err != nil {
			t.Fatalf("reading %q: %v", in, err)
		}
		got[i] = string(b)
	}
	if got[0] != got[1] {
		t.Errorf("%q: read whole %q, a byte at a time %q", in, got[0], got[1])
	}
	return got[0]
}

// The client's model id is shown in each event's data as a client reads it: the data lines of
// one event joined with a line feed, whatever the line ends (LF, CRLF, CR), every other byte as
// it came.
func TestModelRewriter(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"events of one line",
			"event: x\ndata: {\"id\":1,\"model\":\"up-id\"}\n\ndata: [DONE]\n\ndata:{\"model\":\"up-id\"}\r\n",
			"event: x\ndata: {\"id\":1,\"model\":\"client\"}\n\ndata: [DONE]\n\ndata:{\"model\":\"client\"}\r\n"},
		{"an object over several data lines",
			"data: {\"id\":1,\nid: 7\ndata:\"model\"\ndata:   :  \"up-id\" }\n\n",
			"data: {\"id\":1,\nid: 7\ndata:\"model\"\ndata:   :  \"client\" }\n\n"},
		{"CR line ends",
			"event: x\rdata: {\"model\":\"up-id\"}\r\rdata: {\"response\":{\r\ndata: \"model\":\"up-id\"}}\r\n\r\n",
			"event: x\rdata: {\"model\":\"client\"}\r\rdata: {\"response\":{\r\ndata: \"model\":\"client\"}}\r\n\r\n"},
		{"comments and other fields",
			": keep-alive\n\nretry: 10\ndata: {\"model\":\"up-id\"}\n: note\n\n",
			": keep-alive\n\nretry: 10\ndata: {\"model\":\"client\"}\n: note\n\n"},
		{"not one object: as it came",
			"data: {\"model\":\"up-id\"}\ndata: {\"model\":\"up-id\"}\n\ndata: [\"model\"]\n\n",
			"data: {\"model\":\"up-id\"}\ndata: {\"model\":\"up-id\"}\n\ndata: [\"model\"]\n\n"},
		{"an event the stream cut", "data: {\"model\":\n data: \"up-id\"}", "data: {\"model\":\n data: \"up-id\"}"},
		{"the last event without its blank line", "data: {\"model\":\ndata: \"up-id\"}", "data: {\"model\":\ndata: \"client\"}"},
	} {
		if got := rewritten(t, c.in, 0); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// An event longer than the bound, or a line without an end, is not held past it: it goes on
// unchanged as it comes, and the events after it are shown as the client's again.
func TestModelRewriterBoundsAnEvent(t *testing.T) {
	long := strings.Repeat("x", 300)
	in := "data: {\"model\":\"up-id\",\ndata: \"pad\":\"" + long + "\"}\n\ndata: {\"model\":\"up-id\"}\n\n"
	want := "data: {\"model\":\"up-id\",\ndata: \"pad\":\"" + long + "\"}\n\ndata: {\"model\":\"client\"}\n\n"
	if got := rewritten(t, in, 100); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A stream that never ends a line is passed on in pieces, never held whole.
	m := NewModelRewriter(io.NopCloser(io.MultiReader(strings.NewReader("data: "), endless{})), AnswerModels{Model: "client"})
	m.limit = 1 << 20
	var b [64 << 10]byte
	read := 0
	for read < 8<<20 {
		n, err := m.Read(b[:])
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if cap(m.event) > 2<<20 || cap(m.line) > 2<<20 {
		t.Errorf("held %d and %d bytes", cap(m.event), cap(m.line))
	}
}

// endless is a reader of 'x' bytes without end.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// FuzzModelRewriter: a stream is passed on byte for byte but for the model values shown (an
// answer that names no "model" comes out as it went in), however it is cut into reads.
func FuzzModelRewriter(f *testing.F) {
	f.Add("data: {\"id\":1}\r\n\r\ndata: {\"x\":\n data: 2}\n\n: c\rdata: [DONE]\r\r", 7)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if limit < 1 || limit > 1<<10 || strings.Contains(in, "model") {
			return
		}
		m := NewModelRewriter(io.NopCloser(iotest.HalfReader(strings.NewReader(in))), AnswerModels{Model: "client"})
		m.limit = limit
		got, err := io.ReadAll(m)
		if err != nil || string(got) != in {
			t.Fatalf("%q came out %q, %v", in, got, err)
		}
	})
}
