package usage

import "testing"

// TestLegacyCompletionStreamCountsItsChunks: a legacy completion's stream (an added
// /v1/completions, which now asks for its usage as a chat does) that ends without usage, from a
// provider that ignores stream_options, or that its client leaves before the usage chunk, is
// charged the chunks of text it streamed, as docs/billing.md says of such streams ("charged its
// deltas"), not its whole estimate: its chunks carry "text", not "delta".
func TestLegacyCompletionStreamCountsItsChunks(t *testing.T) {
	s := Sniffer{SSE: true}
	for _, word := range []string{`"forty"`, `"-"`, `"two"`} {
		s.Write([]byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":` + word + `,"index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n"))
	}
	if got := s.Seen(true); !got.Known() || got.Completion != 3 {
		t.Errorf("a legacy stream cut after 3 chunks of text: %+v; want 3 output tokens counted", got)
	}
	s.Write([]byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	if got := s.Seen(false); !got.Known() || got.Completion != 3 {
		t.Errorf("a legacy stream of 3 chunks of text that reported no usage: %+v; want 3 output tokens counted", got)
	}
}
