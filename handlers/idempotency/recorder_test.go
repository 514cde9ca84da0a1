package idempotency

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineWriter is a response writer that notes the write deadline set on it.
type deadlineWriter struct {
	*httptest.ResponseRecorder
	deadline time.Time
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.deadline = t
	return nil
}

// A write deadline a handler sets through http.ResponseController reaches the writer under the
// recorder (the client's connection), as it would without the recorder.
func TestRecorderPassesTheWriteDeadlineOn(t *testing.T) {
	under := &deadlineWriter{ResponseRecorder: httptest.NewRecorder()}
	at := time.Now().Add(time.Minute)
	if err := http.NewResponseController(&recorder{ResponseWriter: under, limit: 10}).SetWriteDeadline(at); err != nil || !under.deadline.Equal(at) {
		t.Fatalf("SetWriteDeadline through the recorder: %v, the writer under it got %v", err, under.deadline)
	}
}
