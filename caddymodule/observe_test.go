package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// observedWriterSink keeps TestObservedWriterSizeClass's writers on the heap, as a request's is.
var observedWriterSink *observedWriter

// The observed writer that every request allocates (with the answer writer of its
// mediagw_route inside) is one object of the 480-byte size class. A field more, or a padded flag,
// would take the 512-byte class or more (an object past 512 bytes also carries an 8-byte header),
// bytes to clear for every request.
func TestObservedWriterSizeClass(t *testing.T) {
	o := &observer{}
	r := httptest.NewRequest(http.MethodPost, "http://gateway.test/v1/chat/completions", nil)
	w := httptest.NewRecorder()
	result := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			observedWriterSink = o.begin(w, r, nil)
		}
	})
	if allocs, bytes := result.AllocsPerOp(), result.AllocedBytesPerOp(); allocs != 1 || bytes > 480 {
		t.Errorf("begin allocates %d objects, %d bytes; want one of at most 480", allocs, bytes)
	}
	ow := observedWriterSink
	if answerWriterFor(ow) != &ow.answer || answerWriterFor(ow) == &ow.answer {
		t.Error("mediagw_route's answer writer is not the one the observed writer keeps, taken once")
	}
}
