package usage

import (
	"strings"
	"testing"
)

// Events of an OpenAI Responses stream, as its streaming reference shows them.
const (
	created     = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"error\":null,\"output\":[],\"usage\":null}}\n\n"
	inProgress  = "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"error\":null,\"output\":[],\"usage\":null}}\n\n"
	failedEvent = "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed.\"},\"output\":[],\"usage\":null}}\n\n"
)

// An answer that is an error object and nothing else ({"error":{…}}, with Anthropic's
// "type":"error" beside it) reports that nothing was served; anything more is not such an answer.
func TestSnifferErrorOnly(t *testing.T) {
	for _, c := range []struct {
		name   string
		sse    bool
		chunks []string
		want   bool
	}{
		{"openai error", false, []string{`{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`}, true},
		{"in pieces, with spaces", false, []string{" {\"err", "or\" : {\"message\":\"x\"} }\n"}, true},
		{"anthropic error", false, []string{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, true},
		{"gemini error", false, []string{`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`}, true},
		{"error null", false, []string{`{"error":null}`}, false},
		{"error string", false, []string{`{"error":"x"}`}, false},
		{"error and usage", false, []string{`{"error":{"message":"x"},"usage":{"prompt_tokens":1}}`}, false},
		{"error and data", false, []string{`{"data":[{"url":"u"}],"error":{"message":"x"}}`}, false},
		{"error in another case", false, []string{`{"Error":{"message":"x"}}`}, false},
		{"another type", false, []string{`{"type":"message","error":{"message":"x"}}`}, false},
		{"answer", false, []string{`{"id":"x","choices":[]}`}, false},
		{"not json", false, []string{`{"error":{"message":"x"}`}, false},
		{"empty", false, nil, false},
		{"stream of one error", true, []string{"data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n"}, true},
		{"stream of one error and done", true, []string{"data: {\"error\":{\"message\":\"x\"}}\r\rdata: [DONE]\r\r"}, true},
		{"anthropic stream error", true, []string{"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"}, true},
		{"stream with a delta, then an error", true, []string{
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: {\"error\":{\"message\":\"x\"}}\n\n"}, false},
		{"responses stream error event", true, []string{"event: error\ndata: {\"type\":\"error\",\"code\":\"ERR_SOMETHING\",\"message\":\"Something went wrong\",\"param\":null,\"sequence_number\":1}\n\n"}, true},
		{"responses error event with another member", true, []string{"data: {\"type\":\"error\",\"message\":\"x\",\"usage\":{\"input_tokens\":1}}\n\n"}, false},
		{"responses failed without usage", true, []string{"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"x\"},\"output\":[],\"usage\":null}}\n\n"}, true},
		{"responses failed with usage", true, []string{"data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":0,\"total_tokens\":5}}}\n\n"}, false},
		{"responses created, then error", true, []string{created, "data: {\"type\":\"error\",\"message\":\"x\"}\n\n"}, true},
		{"responses created, in progress, then failed", true, []string{created, inProgress, failedEvent}, true},
		{"responses created, in progress, then error", true, []string{created + inProgress, "event: error\ndata: {\"type\":\"error\",\"code\":null,\"message\":\"x\",\"param\":null,\"sequence_number\":2}\n\n"}, true},
		{"responses queued, created, then failed", true, []string{"data: {\"type\":\"response.queued\",\"response\":{\"status\":\"queued\"}}\n\n", created, failedEvent}, true},
		{"responses created, then only the end", true, []string{created, inProgress}, false},
		{"responses output item, then failed", true, []string{created, "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"},\"sequence_number\":2}\n\n", failedEvent}, false},
		{"responses delta, then failed", true, []string{created, "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":3}\n\n", failedEvent}, false},
		{"responses created, then failed with usage", true, []string{created, "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":0,\"total_tokens\":5}}}\n\n"}, false},
		{"responses created with output", true, []string{"data: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"output\":[{\"type\":\"message\"}]}}\n\n", failedEvent}, false},
		{"responses created with usage in another case", true, []string{"data: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"Usage\":{\"input_tokens\":5}}}\n\n", failedEvent}, false},
		{"responses failed, then created", true, []string{failedEvent, created}, false},
		{"responses failed in another case", true, []string{"data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"Output\":[{\"type\":\"message\"}]}}\n\n"}, false},
		{"stream without events", true, []string{": keep-alive\n\n"}, false},
		{"stream of an unfinished line", true, []string{"data: {\"error\":{\"message\":\"x\"}}"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Sniffer{SSE: c.sse}
			for _, ch := range c.chunks {
				s.Write([]byte(ch))
			}
			if got := s.ErrorOnly(); got != c.want {
				t.Fatalf("ErrorOnly = %v, want %v", got, c.want)
			}
		})
	}
	big := Sniffer{}
	big.Write([]byte(`{"error":{"message":"` + strings.Repeat("x", headMax) + `"}}`))
	if big.ErrorOnly() {
		t.Fatal("an answer larger than the head was read as an error object")
	}
}
