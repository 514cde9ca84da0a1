package usage

import (
	"io"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// BenchmarkRecorderWrite is the usage record of a priced pass-through request: its aggregates
// added to in-memory counters, its log entry JSON-encoded (as Caddy's json log format does) into
// a discarding writer. Run it with
//
//	go test ./handlers/usage/ -run '^$' -bench RecorderWrite -benchmem -cpu 1
func BenchmarkRecorderWrite(b *testing.B) {
	enc := zap.NewProductionEncoderConfig()
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(io.Discard), zapcore.InfoLevel)
	at := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	r := &Recorder{Logger: zap.New(core).Named("mediagw.usage"), Counters: newMem(), Index: newMem(), Now: func() time.Time { return at }}
	rec := Record{Event: EventRequest, Time: at, Account: "bench", KeyID: "key_0123456789abcdef", Endpoint: "/v1/chat/completions",
		Model: "bench-chat", Provider: "chat", Upstream: "default", Amount: 750, Status: "200",
		UpstreamLatency: 183 * time.Microsecond, Tokens: Tokens{Prompt: 1, Completion: 1, Total: 2, known: true}}
	b.ReportAllocs()
	for b.Loop() {
		r.Write(rec)
	}
}

// BenchmarkRecorderWriteManyKeys is BenchmarkRecorderWrite with the records of more keys in turn
// than the child loggers kept (maxRecordLoggers): nearly every record makes its child logger.
func BenchmarkRecorderWriteManyKeys(b *testing.B) {
	enc := zap.NewProductionEncoderConfig()
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(io.Discard), zapcore.InfoLevel)
	at := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	r := &Recorder{Logger: zap.New(core).Named("mediagw.usage"), Counters: newMem(), Index: newMem(), Now: func() time.Time { return at }}
	keys := make([]string, 8*maxRecordLoggers)
	for i := range keys {
		keys[i] = "key_" + strconv.Itoa(i)
	}
	rec := Record{Event: EventRequest, Time: at, Account: "bench", Endpoint: "/v1/chat/completions",
		Model: "bench-chat", Provider: "chat", Upstream: "default", Amount: 750, Status: "200",
		UpstreamLatency: 183 * time.Microsecond, Tokens: Tokens{Prompt: 1, Completion: 1, Total: 2, known: true}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec.KeyID = keys[i%len(keys)]
		i++
		r.Write(rec)
	}
}
