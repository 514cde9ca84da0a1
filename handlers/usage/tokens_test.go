package usage

import (
	"strings"
	"testing"
)

func TestSnifferReadsUsageFromAnswers(t *testing.T) {
	for _, c := range []struct {
		name   string
		sse    bool
		chunks []string
		want   Tokens
	}{
		{"openai json", false, []string{`{"id":"x","choices":[{"message":{"content":"the \"usage\": 99"}}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`},
			Tokens{Prompt: 5, Completion: 7, Total: 12, known: true, output: true}},
		{"anthropic json", false, []string{`{"id":"m","content":[],"usage":{"input_tokens":3,"output_tokens":4}}`},
			Tokens{Prompt: 3, Completion: 4, Total: 7, known: true, output: true}},
		{"gemini json", false, []string{`{"candidates":[],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":6,"totalTokenCount":8}}`},
			Tokens{Prompt: 2, Completion: 6, Total: 8, known: true, output: true}},
		{"gemini thinking is output", false, []string{`{"candidates":[],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":6,"thoughtsTokenCount":30,"totalTokenCount":38}}`},
			Tokens{Prompt: 2, Completion: 36, Total: 38, known: true, output: true}},
		{"gemini thinking without candidates", false, []string{`{"candidates":[],"usageMetadata":{"promptTokenCount":2,"thoughtsTokenCount":30,"totalTokenCount":32}}`},
			Tokens{Prompt: 2, Completion: 30, Total: 32, known: true, output: true, derived: true}},
		{"usage without an output count", false, []string{`{"id":"x","usage":{"prompt_tokens":5}}`},
			Tokens{Prompt: 5, Total: 5, known: true}},
		{"usage with an output count of 0", false, []string{`{"id":"x","usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`},
			Tokens{Prompt: 5, Total: 5, known: true, output: true}},
		{"output count null", false, []string{`{"id":"x","usage":{"input_tokens":5,"output_tokens":null}}`},
			Tokens{Prompt: 5, Total: 5, known: true}},
		{"output from total and prompt", false, []string{`{"id":"x","usage":{"prompt_tokens":5,"total_tokens":12}}`},
			Tokens{Prompt: 5, Completion: 7, Total: 12, known: true, output: true, derived: true}},
		{"gemini leaves a zero candidatesTokenCount out", false, []string{`{"candidates":[],"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4}}`},
			Tokens{Prompt: 4, Total: 4, known: true, output: true, derived: true}},
		{"a negative output count is no count", false, []string{`{"id":"x","usage":{"prompt_tokens":5,"completion_tokens":-5}}`},
			Tokens{Prompt: 5, Total: 5, known: true}},
		{"a negative input count is no count", false, []string{`{"id":"x","usage":{"input_tokens":-9,"output_tokens":4}}`},
			Tokens{Completion: 4, Total: 4, known: true, output: true}},
		// A function call's args are an object the model writes (and the client can steer):
		// a "usage" member there is not the answer's usage, which comes after the candidates.
		{"gemini function call args holding a usage object", false, []string{`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"report","args":{"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}}}]}}],"usageMetadata":{"promptTokenCount":4000,"candidatesTokenCount":6000,"totalTokenCount":10000}}`},
			Tokens{Prompt: 4000, Completion: 6000, Total: 10000, known: true, output: true}},
		{"gemini stream, function call args holding a usage object", true, []string{
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"usageMetadata\":{\"promptTokenCount\":4000,\"candidatesTokenCount\":3000,\"totalTokenCount\":7000}}\r\n\r\n",
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"report\",\"args\":{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}}}]}}],\"usageMetadata\":{\"promptTokenCount\":4000,\"candidatesTokenCount\":6000,\"totalTokenCount\":10000}}\r\n\r\n"},
			Tokens{Prompt: 4000, Completion: 6000, Total: 10000, known: true, output: true}},
		{"anthropic tool input holding a usageMetadata object", false, []string{`{"id":"m","content":[{"type":"tool_use","input":{"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}}],"usage":{"input_tokens":300,"output_tokens":400}}`},
			Tokens{Prompt: 300, Completion: 400, Total: 700, known: true, output: true}},
		{"anthropic prompt caching: cached input is input", false, []string{`{"id":"m","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":3990,"cache_read_input_tokens":1000,"output_tokens":4}}`},
			Tokens{Prompt: 5000, Completion: 4, Total: 5004, known: true, output: true, CacheWrite5m: 3990, CacheRead: 1000}},
		{"anthropic cache writes split by TTL", false, []string{`{"id":"m","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":3990,` +
			`"cache_creation":{"ephemeral_5m_input_tokens":990,"ephemeral_1h_input_tokens":3000},"cache_read_input_tokens":1000,"output_tokens":4}}`},
			Tokens{Prompt: 5000, Completion: 4, Total: 5004, known: true, output: true, CacheWrite5m: 990, CacheWrite1h: 3000, CacheRead: 1000}},
		{"anthropic cache writes split, in another member order and letter case", false, []string{`{"id":"m","content":[],"usage":{"Cache_Creation":{"ephemeral_1h_input_tokens":3000},` +
			`"input_tokens":10,"cache_creation_input_tokens":3990,"output_tokens":4}}`},
			Tokens{Prompt: 4000, Completion: 4, Total: 4004, known: true, output: true, CacheWrite5m: 990, CacheWrite1h: 3000}},
		{"anthropic stream, cache writes in message_start", true, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_creation_input_tokens\":991,\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":991},\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"},
			Tokens{Prompt: 1000, Completion: 15, Total: 1015, known: true, output: true, CacheWrite1h: 991}},
		{"anthropic stream, cache read in message_start", true, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_read_input_tokens\":991,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"},
			Tokens{Prompt: 1000, Completion: 15, Total: 1015, known: true, output: true, CacheRead: 991}},
		{"cache members beside prompt_tokens are counted in it already", false, []string{`{"id":"x","usage":{"prompt_tokens":50,"cache_read_input_tokens":40,"completion_tokens":2}}`},
			Tokens{Prompt: 50, Completion: 2, Total: 52, known: true, output: true}},
		{"no usage", false, []string{`{"data":[{"url":"https://example.com/a.png"}]}`}, Tokens{}},
		{"openai stream, final usage chunk split across writes", true, []string{
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n",
			"data: {\"choices\":[],\"usa", "ge\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n", "\ndata: [DONE]\n\n"},
			Tokens{Prompt: 11, Completion: 2, Total: 13, known: true, output: true}},
		{"anthropic stream, usage in two events", true, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"},
			Tokens{Prompt: 9, Completion: 15, Total: 24, known: true, output: true}},
		{"stream without usage", true, []string{"data: {\"choices\":[]}\n\ndata: [DONE]\n\n"}, Tokens{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Sniffer{SSE: c.sse}
			for _, ch := range c.chunks {
				s.Write([]byte(ch))
			}
			if got := s.Tokens(); got != c.want {
				t.Fatalf("tokens = %+v, want %+v", got, c.want)
			}
		})
	}
}

// A large JSON answer keeps only its head and tail; the usage at its end is still found.
func TestSnifferLargeAnswerKeepsTail(t *testing.T) {
	s := Sniffer{}
	s.Write([]byte(`{"data":[`))
	chunk := []byte(strings.Repeat(`{"embedding":[0.1,0.2,0.3]},`, 1000))
	for range 50 {
		s.Write(chunk)
	}
	s.Write([]byte(`{"embedding":[]}],"usage":{"prompt_tokens":8,"total_tokens":8}}`))
	if len(s.buf) > tailMax || len(s.head) > headMax {
		t.Fatalf("kept %d + %d bytes", len(s.head), len(s.buf))
	}
	if got := s.Tokens(); got.Prompt != 8 || got.Total != 8 || !got.Known() {
		t.Fatalf("tokens = %+v", got)
	}
}

// A stream line longer than the line bound is not kept whole: of a data line only its end is,
// and read for usage when the line ends; another line is skipped.
func TestSnifferSkipsOverlongLines(t *testing.T) {
	s := Sniffer{SSE: true}
	s.Write([]byte("data: " + strings.Repeat("x", lineMax+10)))
	s.Write([]byte(`"usage":{"prompt_tokens":1}}` + "\n"))
	s.Write([]byte("data: {\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n"))
	if len(s.buf) > 0 {
		t.Fatalf("kept %d bytes", len(s.buf))
	}
	if got := s.Tokens(); got.Prompt != 4 || got.Total != 5 {
		t.Fatalf("tokens = %+v", got)
	}
}

// A Responses event longer than the line bound (the whole response, echoed instructions and all,
// then its usage), arriving in pieces, is charged its usage; what is kept of it stays bounded.
func TestSnifferReadsUsageAtTheEndOfAnOverlongEvent(t *testing.T) {
	s := Sniffer{SSE: true}
	s.Write([]byte("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"instructions\":\""))
	long := []byte(strings.Repeat("be brief ", 1000))
	for range 150 {
		s.Write(long)
	}
	s.Write([]byte("\",\"usage\":null}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"instructions\":\""))
	for range 150 {
		s.Write(long)
		if len(s.buf) > lineMax {
			t.Fatalf("kept %d bytes of an overlong line", len(s.buf))
		}
	}
	if len(s.buf) > overlongTail {
		t.Fatalf("kept %d bytes of an overlong line past its bound", len(s.buf))
	}
	s.Write([]byte("\",\"usage\":{\"input_tokens\":10000,\"output_tokens\":5000,\"total_tokens\":15000},\"user\":null,\"metadata\":{}}}\n\n"))
	if got := s.Seen(false); got.Prompt != 10000 || got.Completion != 5000 || !got.OutputReported() {
		t.Fatalf("tokens = %+v", got)
	}
	// An overlong line that is not data (a comment) is not read.
	c := Sniffer{SSE: true}
	c.Write([]byte(": " + strings.Repeat("x", lineMax) + `"usage":{"prompt_tokens":1}` + "\n"))
	if got := c.Tokens(); got.Known() {
		t.Fatalf("a comment's usage was read: %+v", got)
	}
}

func FuzzSniffer(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1}}`), true)
	f.Add([]byte("data: {\"usage\":{\"input_tokens\":2}}\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, sse bool) {
		s := Sniffer{SSE: sse}
		s.Write(b)
		s.Write(b)
		_ = s.Tokens()
		_ = s.ErrorOnly()
	})
}

// TestSnifferSeenCountsDeltasOfACutStream: a stream cut before its usage event is charged one
// output token per delta event seen; Anthropic's message_start (output_tokens 1) does not hide
// the deltas after it; a stream that ended with its usage keeps the usage.
func TestSnifferSeenCountsDeltasOfACutStream(t *testing.T) {
	chunk := func(text string) string {
		return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"}}],\"usage\":null}\n\n"
	}
	openai := Sniffer{SSE: true}
	for _, w := range []string{"a", "b", "c", "d", "e"} {
		openai.Write([]byte(chunk(w)))
	}
	if got := openai.Seen(true); got.Completion != 5 || !got.Known() || got.Prompt != 0 {
		t.Fatalf("cut OpenAI stream of 5 deltas: %+v", got)
	}
	openai.Write([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":6,\"total_tokens\":17}}\n\n"))
	if got := openai.Seen(false); got.Completion != 6 || got.Prompt != 11 {
		t.Fatalf("a stream that ended with its usage: %+v, want the usage", got)
	}

	anthropic := Sniffer{SSE: true}
	anthropic.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"))
	for range 4 {
		anthropic.Write([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	}
	if got := anthropic.Seen(true); got.Prompt != 9 || got.Completion != 4 || got.Total != 13 {
		t.Fatalf("cut Anthropic stream: %+v, want 9 input and 4 output", got)
	}
	if got := (&Sniffer{}).Seen(true); got.Known() {
		t.Fatalf("a JSON answer without usage: %+v", got)
	}
}

// TestSnifferRoleChunkIsNoOutput: the chunk that opens OpenAI's chat stream (its role, an empty
// content, a null refusal) is neither a delta nor output served: a stream of it alone has served
// nothing, one of it and an error is an error only, and it adds no token to the deltas after it.
// A role chunk with content, another member, a repeated or differently cased member is output.
func TestSnifferRoleChunkIsNoOutput(t *testing.T) {
	const role = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"finish_reason\":null}]}\n\n"
	s := Sniffer{SSE: true}
	s.Write([]byte(role))
	if !s.NothingServed() || s.Seen(true).Known() {
		t.Fatalf("a stream of its role chunk: served %v, seen %+v; want nothing", !s.NothingServed(), s.Seen(true))
	}
	s.Write([]byte("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"))
	if !s.ErrorOnly() {
		t.Fatal("a role chunk and an error: want an error only")
	}
	s = Sniffer{SSE: true}
	s.Write([]byte(role))
	for range 3 {
		s.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"))
	}
	if got := s.Seen(true); got.Completion != 3 || s.NothingServed() {
		t.Fatalf("a role chunk and 3 deltas: %+v; want 3 output tokens", got)
	}
	for _, chunk := range []string{
		`{"choices":[{"delta":{"role":"assistant","content":"hi"}}]}`,
		`{"choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0}]}}]}`,
		`{"choices":[{"delta":{"role":"assistant","Content":"hi"}}]}`,
		`{"choices":[{"delta":{"role":"assistant","content":"","content":"hi"}}]}`,
		`{"choices":[{"delta":{"role":"assistant"}}],"Choices":[{"delta":{"content":"hi"}}]}`,
		`{"choices":[{"delta":{"role":"assistant"}},{"delta":{"content":"hi"}}]}`,
		`{"choices":[],"delta":{"role":"assistant"}}`,
	} {
		s := Sniffer{SSE: true}
		s.Write([]byte("data: " + chunk + "\n\n"))
		if s.NothingServed() || s.Seen(true).Completion != 1 {
			t.Errorf("%s: served %v, seen %+v; want output, one token", chunk, !s.NothingServed(), s.Seen(true))
		}
	}
}

// TestTokensAtMostOutput: an output counted from a cut stream's deltas is bounded by the
// request's estimate; a reported one, or one without an estimate, is not.
func TestTokensAtMostOutput(t *testing.T) {
	s := Sniffer{SSE: true}
	s.Write([]byte("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"))
	for range 300 {
		s.Write([]byte("data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	}
	if got := s.Seen(true).AtMostOutput(200); got.Completion != 200 || got.Prompt != 9 || got.Total != 209 || !got.OutputReported() {
		t.Fatalf("300 deltas, estimate 200: %+v; want 200 output tokens", got)
	}
	if got := s.Seen(true).AtMostOutput(0); got.Completion != 300 {
		t.Fatalf("300 deltas without an estimate: %+v; want 300", got)
	}
	s.Write([]byte("data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":500}}\n\n"))
	if got := s.Seen(true).AtMostOutput(200); got.Completion != 500 {
		t.Fatalf("a reported 500: %+v; want the report", got)
	}
}

// TestTokensAtLeastOutput: an output counted from the deltas of a stream that reported none is
// raised to the hold's estimate (and past it stays as counted); a reported one is not raised.
func TestTokensAtLeastOutput(t *testing.T) {
	s := Sniffer{SSE: true}
	for range 3 {
		s.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"))
	}
	s.Write([]byte("data: [DONE]\n\n"))
	if got := s.Seen(false).AtLeastOutput(2000); got.Completion != 2000 || got.Total != 2000 || !got.OutputReported() {
		t.Fatalf("3 deltas without usage, estimate 2000: %+v; want 2000 output tokens", got)
	}
	if got := s.Seen(false).AtLeastOutput(2); got.Completion != 3 {
		t.Fatalf("3 deltas, estimate 2: %+v; want 3", got)
	}
	s.Write([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n"))
	if got := s.Seen(false).AtLeastOutput(2000); got.Completion != 5 {
		t.Fatalf("a reported 5: %+v; want the report", got)
	}
}

// TestTokensAsInput: a call that makes no output (an embedding, a rerank) whose answer reports
// only a total (Voyage's usage.total_tokens) is charged that total as input; a reported input
// count stays as it is, and an answer that reported nothing stays unknown.
func TestTokensAsInput(t *testing.T) {
	total := Tokens{known: true, Total: 10_100}
	if got := total.AsInput(); got.Prompt != 10_100 || got.Completion != 0 {
		t.Errorf("a total alone as input = %+v, want 10100 input tokens", got)
	}
	reported := Tokens{known: true, Prompt: 7, Total: 7}
	if got := reported.AsInput(); got.Prompt != 7 {
		t.Errorf("a reported input as input = %+v, want 7", got)
	}
	if got := (Tokens{}).AsInput(); got.Known() || got.Prompt != 0 {
		t.Errorf("nothing reported as input = %+v, want unknown", got)
	}
}
