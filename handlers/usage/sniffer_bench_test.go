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
