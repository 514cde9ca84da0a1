package usage

import "testing"

// chatAnswer is a short chat completion as an upstream answers it, with its usage at the end.
const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// BenchmarkSnifferJSON is the usage read of every JSON pass-through answer: the sniffer takes the
// body as it streams by and reads its usage at the end.
//
//	go test ./handlers/usage/ -run '^$' -bench SnifferJSON -benchmem
func BenchmarkSnifferJSON(b *testing.B) {
	body := []byte(chatAnswer)
	b.ReportAllocs()
	for b.Loop() {
		var s Sniffer
		s.Write(body)
		if t := s.Seen(false); t.Total != 2 {
			b.Fatalf("tokens %+v", t)
		}
		s.Release()
	}
}

// BenchmarkSnifferResponsesStream is the usage read of a streamed Responses answer as the
// reference shows one: response.created, response.in_progress, an output item, 50 deltas, its
// end and response.completed with the usage. Only its leading events are classified (see
// ErrorOnly); the deltas cost what every stream's events cost.
//
//	go test ./handlers/usage/ -run '^$' -bench SnifferResponsesStream -benchmem
func BenchmarkSnifferResponsesStream(b *testing.B) {
	var stream []byte
	add := func(event, data string) { stream = append(stream, "event: "+event+"\ndata: "+data+"\n\n"...) }
	const response = `"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"Be brief.","model":"bench-chat","output":[],"usage":null}`
	add("response.created", `{"type":"response.created","sequence_number":0,`+response+`}`)
	add("response.in_progress", `{"type":"response.in_progress","sequence_number":1,`+response+`}`)
	add("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"},"sequence_number":2}`)
	for i := range 50 {
		add("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"word ","logprobs":[],"sequence_number":`+string(rune('0'+i%10))+`}`)
	}
	add("response.completed", `{"type":"response.completed","sequence_number":60,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","text":"word word","annotations":[]}],"role":"assistant"}],"usage":{"input_tokens":9,"output_tokens":50,"total_tokens":59}}}`)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		s := Sniffer{SSE: true}
		s.Write(stream)
		if t := s.Seen(false); t.Total != 59 || s.ErrorOnly() {
			b.Fatalf("tokens %+v", t)
		}
		s.Release()
	}
}
