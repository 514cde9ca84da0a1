package usage

import (
	"strings"
	"testing"
)

// Gemini's toolUsePromptTokenCount (the results of its tools, given back to the model as input)
// is input: it is outside promptTokenCount, and totalTokenCount is the sum of prompt, candidates,
// tool-use prompt and thoughts. Streamed (alt=sse) or not.
func TestSnifferChargesGeminiToolUsePromptAsInput(t *testing.T) {
	const body = `{"candidates":[],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":6,"toolUsePromptTokenCount":900,"thoughtsTokenCount":30,"totalTokenCount":946}}`
	want := Tokens{Prompt: 910, Completion: 36, Total: 946, known: true, output: true}
	json := Sniffer{}
	json.Write([]byte(body))
	if got := json.Tokens(); got != want {
		t.Fatalf("generateContent: %+v, want %+v", got, want)
	}
	sse := Sniffer{SSE: true}
	sse.Write([]byte("data: " + `{"candidates":[],"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10}}` + "\r\n\r\n"))
	sse.Write([]byte("data: " + body + "\r\n\r\n"))
	if got := sse.Tokens(); got != want {
		t.Fatalf("streamGenerateContent: %+v, want %+v", got, want)
	}
	// Without candidatesTokenCount (Gemini leaves a zero count out), the output is the total
	// less the whole input, tool-use prompt included.
	noCandidates := Sniffer{}
	noCandidates.Write([]byte(`{"usageMetadata":{"promptTokenCount":10,"toolUsePromptTokenCount":900,"thoughtsTokenCount":30,"totalTokenCount":940}}`))
	if got := noCandidates.Tokens(); got.Prompt != 910 || got.Completion != 30 || !got.OutputReported() {
		t.Fatalf("without candidates: %+v, want 910 input and 30 output", got)
	}
	// The member is Gemini's: beside OpenAI's or Anthropic's counts it is not read.
	other := Sniffer{}
	other.Write([]byte(`{"usage":{"prompt_tokens":10,"completion_tokens":2,"toolUsePromptTokenCount":900}}`))
	if got := other.Tokens(); got.Prompt != 10 {
		t.Fatalf("OpenAI usage with a toolUsePromptTokenCount: %+v, want 10 input", got)
	}
}

// Anthropic's server_tool_use counts requests (web searches, web fetches), which Anthropic bills
// per request, not tokens: they are not read as tokens, however the object is laid out.
func TestSnifferDoesNotReadServerToolUseAsTokens(t *testing.T) {
	want := Tokens{Prompt: 12, Completion: 40, Total: 52, known: true, output: true}
	for _, body := range []string{
		`{"id":"m","content":[],"usage":{"input_tokens":12,"output_tokens":40,"server_tool_use":{"web_search_requests":3,"web_fetch_requests":2}}}`,
		`{"id":"m","content":[],"usage":{"server_tool_use":{"web_search_requests":3,"input_tokens":500,"output_tokens":500},"input_tokens":12,"output_tokens":40}}`,
	} {
		s := Sniffer{}
		s.Write([]byte(body))
		if got := s.Tokens(); got != want {
			t.Fatalf("%s: %+v, want %+v", body, got, want)
		}
	}
	sse := Sniffer{SSE: true}
	sse.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"))
	sse.Write([]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":40,\"server_tool_use\":{\"web_search_requests\":3}}}\n\n"))
	if got := sse.Tokens(); got != want {
		t.Fatalf("stream: %+v, want %+v", got, want)
	}
}

// The SSE format ends a line with CRLF, LF or a bare CR; usage is read across all three, in
// whatever pieces the stream arrives.
func TestSnifferReadsEveryLineEnd(t *testing.T) {
	events := []string{
		`data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}`,
		`data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}`,
		`data: [DONE]`,
	}
	for _, end := range []string{"\n", "\r\n", "\r"} {
		stream := strings.Join(events, end+end) + end + end
		for _, size := range []int{1, 2, 7, len(stream)} {
			s := Sniffer{SSE: true}
			for i := 0; i < len(stream); i += size {
				s.Write([]byte(stream[i:min(i+size, len(stream))]))
			}
			if got := s.Seen(false); got.Prompt != 11 || got.Completion != 2 || s.deltas != 1 {
				t.Fatalf("line end %q in pieces of %d: %+v, %d deltas; want 11 and 2 tokens, 1 delta", end, size, got, s.deltas)
			}
		}
	}
	// A data line too long to keep ends at a bare CR too, and its end is read.
	s := Sniffer{SSE: true}
	s.Write([]byte("data: {\"x\":\"" + strings.Repeat("x", lineMax+10)))
	s.Write([]byte(`","usage":{"prompt_tokens":3,"completion_tokens":4}}` + "\r\r"))
	if got := s.Tokens(); got.Prompt != 3 || got.Completion != 4 {
		t.Fatalf("overlong line ended by CR: %+v", got)
	}
}
