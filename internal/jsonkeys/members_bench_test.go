package jsonkeys

import (
	"strings"
	"testing"
)

// BenchmarkMembers is the router's check of a chat body's keys (Members with model and the
// priced fields): bench/run.sh's 70-byte body, and a conversation of 20 messages.
//
//	go test ./internal/jsonkeys/ -run '^$' -bench Members -benchmem -cpu 1
func BenchmarkMembers(b *testing.B) {
	turn := `{"role":"user","content":"a question of a usual length, with \"quotes\" and a number 12.5e3"},{"role":"assistant","content":"an answer of a usual length, a sentence or two"}`
	for name, body := range map[string]string{
		"bench":    `{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`,
		"20 turns": `{"model":"bench-chat","temperature":0.7,"max_tokens":512,"messages":[` + strings.Repeat(turn+",", 9) + turn + `]}`,
	} {
		b.Run(name, func(b *testing.B) {
			data := []byte(body)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Members(data, "model", "max_tokens", "max_completion_tokens", "max_output_tokens", "n", "size", "quality"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
