package usage

import (
	"encoding/json"
	"testing"
)

// TestReadDeltaCountsOnlyOutput: a chat chunk or a Responses event carries output when its delta
// has text, reasoning, a refusal, a tool call's name or arguments; the final chat chunk (an empty
// delta and the finish_reason), a chunk of an empty content or of its role alone, a Responses
// event's empty delta carry none. Whatever reads differently in another decoder (a repeated or
// differently cased member) or does not read at all is output.
func TestReadDeltaCountsOnlyOutput(t *testing.T) {
	for _, tc := range []struct {
		data string
		want deltaKind
	}{
		{`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`, outputDelta},
		{`{"choices": [{"index": 0, "delta": {"content": "hi"}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0}]}}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{}}]}`, emptyDelta},
		{`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, emptyDelta},
		{`{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`, emptyDelta},
		{`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[]},"finish_reason":"stop"}]}`, emptyDelta},
		{`{"choices":[{"index":0,"delta":{ },"finish_reason":"length"},{"index":1,"finish_reason":"stop"}]}`, emptyDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`, roleDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null}}]}`, roleDelta},
		{`{"choices":[{"index":0,"delta":{"content":"","role":"assistant"}}]}`, roleDelta},
		{`{"choices":[{"delta":{"role":"assistant"}},{"delta":{"content":"hi"}}]}`, outputDelta},
		{`{"choices":[{"delta":{}},{"delta":{"content":"hi"}}]}`, outputDelta},
		{`{"choices":[{"delta":{"content":"","content":"hi"}}]}`, outputDelta},
		{`{"choices":[{"delta":{"Content":"hi"}}]}`, outputDelta},
		{`{"choices":[{"delta":{"Role":"assistant"}}]}`, outputDelta},
		{`{"choices":[{"delta":{}}],"Choices":[{"delta":{"content":"hi"}}]}`, outputDelta},
		{`{"choices":[],"delta":{"role":"assistant"}}`, outputDelta},
		{`{"choices":[{"delta":{}}]`, outputDelta},
		{`{"choices":[{"delta":"x"}]}`, outputDelta},
		{`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"word","logprobs":[]}`, outputDelta},
		{`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","delta":"Thinking"}`, outputDelta},
		{`{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"a\":"}`, outputDelta},
		{`{"type":"response.output_text.delta","item_id":"msg_1","delta":"","logprobs":[]}`, emptyDelta},
		{`{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"","delta":"x"}`, outputDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, outputDelta},
		{`{"type":"response.output_text.done","text":"delta"}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`, outputDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assistant", "content":""},"finish_reason":"stop"}]}`, roleDelta},
		{`{"choices":[{"index":0,"delta":{"role":"assi\"stant","content":"x"}}]}`, outputDelta},
	} {
		if got := readDelta([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.data, got, tc.want)
		}
	}
	// The usual chunks are decided without decoding: a delta of content, of a tool call's
	// arguments, one of its role and content (as some upstreams send every chunk), a Responses
	// event's delta, Anthropic's.
	for _, data := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}`,
		`{"type":"response.output_text.delta","item_id":"msg_1","delta":"word"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
	} {
		if !firstMemberIsOutput([]byte(data)) {
			t.Errorf("%s is decoded", data)
		}
	}
}

// TestSnifferCountsNoDeltaWithoutOutput: a chat stream finished without usage (no include_usage)
// is charged one token per chunk of output, not for its role chunk, its chunk of an empty
// content or its final chunk; a Responses stream cut after an empty delta and 2 deltas is
// charged 2.
func TestSnifferCountsNoDeltaWithoutOutput(t *testing.T) {
	chat := Sniffer{SSE: true}
	for _, delta := range []string{`{"role":"assistant","content":"","refusal":null}`, `{"content":""}`,
		`{"content":"a"}`, `{"content":"b"}`, `{"content":"c"}`, `{"role":"assistant"}`} {
		chat.Write([]byte(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"))
	}
	chat.Write([]byte(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	if got := chat.Seen(false); got.Completion != 3 {
		t.Fatalf("a finished chat stream of 3 tokens without usage: %+v; want 3 output tokens", got)
	}
	responses := Sniffer{SSE: true}
	for _, delta := range []string{"", "a", "b"} {
		responses.Write([]byte(`data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"` + delta + `"}` + "\n\n"))
	}
	responses.Write([]byte(`data: {"type":"response.output_text.done","item_id":"msg_1","text":"ab"}` + "\n\n"))
	if got := responses.Seen(true); got.Completion != 2 {
		t.Fatalf("a cut Responses stream of an empty delta and 2 deltas: %+v; want 2 output tokens", got)
	}
}

// TestSnifferStreamWithoutOutput: a chat stream of its role chunk and its final chunk (an empty
// delta) made no output. Ended (or cut after its [DONE]), it is charged 0 output tokens
// (reported so), not the estimate; cut by the client before its end, nothing counted stands for
// the estimate; broken off by the upstream it has
// served nothing; with an error after it, it is an error only.
func TestSnifferStreamWithoutOutput(t *testing.T) {
	const (
		role  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}` + "\n\n"
		empty = `data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}` + "\n\n"
		final = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	)
	s := Sniffer{SSE: true}
	s.Write([]byte(role + empty + final + "data: [DONE]\n\n"))
	if got := s.Seen(false); !got.Known() || !got.OutputReported() || got.Completion != 0 {
		t.Fatalf("an ended stream without output: %+v; want 0 output tokens, as reported", got)
	}
	if got := s.Seen(true); !got.Known() || got.Completion != 0 {
		t.Fatalf("a stream without output cut after its [DONE]: %+v; want 0 output tokens", got)
	}
	cut := Sniffer{SSE: true}
	cut.Write([]byte(role + empty + final))
	if got := cut.Seen(true); got.Known() {
		t.Fatalf("a cut stream without output: %+v; want nothing counted (the estimate)", got)
	}
	if !s.NothingServed() {
		t.Fatal("a stream of deltas without output has served something")
	}
	s.Write([]byte(`data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"))
	if !s.ErrorOnly() {
		t.Fatal("deltas without output and an error: want an error only")
	}
	s = Sniffer{SSE: true}
	s.Write([]byte(role + empty + `data: {"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n" + final))
	if got := s.Seen(false); got.Completion != 1 || s.NothingServed() {
		t.Fatalf("a stream of one token: %+v, served %v; want 1 output token, served", got, !s.NothingServed())
	}
}

// FuzzReadDelta: reading any line never panics, and a line that is not JSON carries output.
func FuzzReadDelta(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null}}]}`,
		`{"type":"response.output_text.delta","delta":""}`,
		`{"delta" : { "content" : "x"`,
		`{"delta":{"\u0072ole":"a"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got := readDelta(data); !json.Valid(data) && got != outputDelta {
			t.Fatalf("%q is no JSON and read as %v", data, got)
		}
	})
}

// TestSnifferAnthropicMessageDeltaIsNoOutput: Anthropic's message_delta event carries the
// stop reason and the usage, not a token, and a content block's delta of an empty text or empty
// partial JSON (Anthropic opens a tool use block with one) carries none either: a stream that
// made no output, ended or cut after its message_delta, is charged the output it reports (0),
// not one token for the event. A content_block_delta of text is one token, as before; a
// message_delta whose type is repeated or in another case is read as output.
func TestSnifferAnthropicMessageDeltaIsNoOutput(t *testing.T) {
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":30,\"output_tokens\":0}}}\n\n"
		empty = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
		delta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":0}}\n\n"
		stop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	)
	for _, c := range []struct {
		name   string
		stream string
		cut    bool
	}{{"ended", start + delta + stop, false}, {"cut after message_delta", start + delta, true}, {"an empty tool delta, ended", start + empty + delta + stop, false}} {
		s := Sniffer{SSE: true}
		s.Write([]byte(c.stream))
		if got := s.Seen(c.cut); !got.Known() || got.Completion != 0 || got.Prompt != 30 {
			t.Errorf("%s: %+v; want 30 input and 0 output tokens, as reported", c.name, got)
		}
	}
	for _, c := range []struct {
		data string
		want deltaKind
	}{
		{`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, emptyDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, emptyDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, emptyDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, outputDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, outputDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`, outputDelta},
		{`{"type":"content_block_delta","index":0,"delta":{"text":"message_delta"}}`, outputDelta},
		{`{"type":"message_delta","Type":"content_block_delta","delta":{"text":"x"}}`, outputDelta},
		{`{"type":"message_delta","type":"content_block_delta","delta":{"text":"x"}}`, outputDelta},
	} {
		if got := readDelta([]byte(c.data)); got != c.want {
			t.Errorf("%s: %v; want %v", c.data, got, c.want)
		}
	}
}
