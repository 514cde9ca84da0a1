package usage

import "testing"

// TestReviewStreamKeepsCacheWriteSplitAcrossMessageDelta: Anthropic's message_delta usage is
// cumulative and has cache_creation_input_tokens (MessageDeltaUsage in its SDKs) but no
// cache_creation split, which only message_start's message.usage carries. The 1-hour writes
// message_start reported stay 1-hour writes: the later total without a split does not turn them
// into 5-minute writes (charged at 1.25 × input instead of 2 ×).
func TestReviewStreamKeepsCacheWriteSplitAcrossMessageDelta(t *testing.T) {
	s := Sniffer{SSE: true}
	s.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_creation_input_tokens\":991," +
		"\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":991},\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n"))
	s.Write([]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}," +
		"\"usage\":{\"input_tokens\":9,\"cache_creation_input_tokens\":991,\"cache_read_input_tokens\":0,\"output_tokens\":15}}\n\n"))
	got := s.Tokens()
	if got.CacheWrite1h != 991 || got.CacheWrite5m != 0 {
		t.Errorf("cache writes 5m %d, 1h %d; want 5m 0, 1h 991 (message_start's split)", got.CacheWrite5m, got.CacheWrite1h)
	}
}
