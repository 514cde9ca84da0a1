package usage

import (
	"fmt"
	"testing"
)

// TestSnifferGeminiStreamCutCountsChunks: Gemini's streamGenerateContent (alt=sse) reports, in
// every chunk before its last, a usageMetadata of the prompt and a total equal to it (no
// candidatesTokenCount yet), and the output count in its last chunk. A stream cut after 3 chunks
// of text (the client left, or the upstream broke it off before the last chunk) served output:
// it is charged the tokens of its chunks' output, one per 4 bytes (at least one a chunk), not 0
// output tokens (the total less the prompt of a chunk that has not counted its output yet). A
// chunk without output (no part, an empty text) is no token; a stream that ends with its count
// is charged that count.
func TestSnifferGeminiStreamCutCountsChunks(t *testing.T) {
	const chunk = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"index":0}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash"}` + "\r\n\r\n"
	s := Sniffer{SSE: true}
	for _, text := range []string{`"The quick brown fox "`, `"jumps over the lazy dog"`, `""`, `"!"`} {
		s.Write([]byte(fmt.Sprintf(chunk, text)))
	}
	if got := s.Seen(true); !got.Known() || got.Completion != 5+6+1 || got.Prompt != 8 {
		t.Fatalf("a Gemini stream cut after 3 chunks of text: %+v; want 8 input and 12 output tokens (20, 23 and 1 bytes)", got)
	}
	s.Write([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":" jumps"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":55,"totalTokenCount":63},"modelVersion":"gemini-2.0-flash"}` + "\r\n\r\n"))
	if got := s.Seen(false); got.Completion != 55 || got.Prompt != 8 {
		t.Fatalf("a Gemini stream ended with its count: %+v; want 8 input and 55 output tokens", got)
	}
	for _, c := range []struct {
		data string
		want deltaKind
	}{
		{`{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"index":0}]}`, outputDelta},
		{`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},"index":0}]}`, outputDelta},
		{`{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thought":true}]},"index":0}]}`, outputDelta},
		{`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}]}`, emptyDelta},
		{`{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}]}`, emptyDelta},
		{`{"candidates":[],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`, emptyDelta},
		{`{"candidates":[{"content":{"parts":[{"text":""}]}}],"Candidates":[{"content":{"parts":[{"text":"x"}]}}]}`, outputDelta},
		{`{"candidates":[{"content":{"parts":[{"text":"","Text":"x"}]}}]}`, outputDelta},
		{`{"candidates":"x"}`, outputDelta},
	} {
		if got, _, ok := readCandidates([]byte(c.data)); got != c.want || !ok {
			t.Errorf("%s: %v, %v; want %v", c.data, got, ok, c.want)
		}
	}
	if _, _, ok := readCandidates([]byte(`{"usageMetadata":{"promptTokenCount":8},"text":"\"candidates\""}`)); ok {
		t.Error("a line without a candidates member is read as a Gemini chunk")
	}
}

// TestSnifferGeminiJSONStreamCut: Gemini's streamGenerateContent without alt=sse answers one
// JSON array of the chunks, each with the usageMetadata of its prompt alone but the last. Cut
// before its last chunk (the client left) it has not reported its output: the estimate stands
// for it, not 0 output tokens. Complete, its last chunk's count is charged, and a last chunk
// that leaves a zero count out (a total equal to its prompt) is 0 output tokens.
func TestSnifferGeminiJSONStreamCut(t *testing.T) {
	const chunk = `{"candidates":[{"content":{"role":"model","parts":[{"text":"The"}]},"index":0}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`
	s := Sniffer{}
	s.Write([]byte("[" + chunk + ",\r\n" + chunk + ",\r\n"))
	if got := s.Seen(true); got.OutputReported() || got.Prompt != 8 {
		t.Fatalf("a cut JSON stream of Gemini chunks: %+v; want 8 input tokens and the output not reported", got)
	}
	s.Write([]byte(chunk + "]"))
	if got := s.Seen(false); !got.OutputReported() || got.Completion != 0 {
		t.Fatalf("a complete JSON answer whose usage leaves its zero output count out: %+v; want 0 output tokens, reported", got)
	}
	full := Sniffer{}
	full.Write([]byte("[" + chunk + ",\r\n" + `{"candidates":[],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":55,"totalTokenCount":63}}]`))
	if got := full.Seen(true); !got.OutputReported() || got.Completion != 55 {
		t.Fatalf("a JSON stream cut after its last chunk: %+v; want its 55 output tokens", got)
	}
}
