package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStreamDrainReadsOnForItsClient: while the client is there, the answer reaches it; once
// it has left, nothing more does, each write is taken whole (so reverse_proxy reads on) until
// streamDrainBytes, past which a write fails; and the call is cut its drain after the client
// left, not at once.
func TestStreamDrainReadsOnForItsClient(t *testing.T) {
	client, leave := context.WithCancel(context.Background())
	call := keepStreaming(client)
	call.drainStreams(100 * time.Millisecond)
	defer call.end()
	rec := httptest.NewRecorder()
	d := newStreamDrain(rec, client, call)
	d.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	d.WriteHeader(http.StatusOK)
	if n, err := d.Write([]byte("data: 1\n\n")); n != 9 || err != nil {
		t.Fatalf("a write to a client that is there: %d %v", n, err)
	}
	leave()
	chunk := make([]byte, 1<<20)
	for i := range streamDrainBytes >> 20 {
		if n, err := d.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write %d after the client left: %d %v", i, n, err)
		}
	}
	if err := d.FlushError(); err != nil {
		t.Errorf("a flush after the client left: %v", err)
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, errDrainBound) {
		t.Errorf("a write past the drain's bytes: %v, want errDrainBound", err)
	}
	if rec.Body.String() != "data: 1\n\n" {
		t.Errorf("the client got %d bytes, want only what came before it left", rec.Body.Len())
	}
	if call.ctx.Err() != nil {
		t.Fatal("the call was cut as its client left, before its drain ran out")
	}
	awaitCut(t, call, "the call outlived its drain")
}

// TestStreamDrainCutsAnAnswerThatIsNoStream: a call whose answer is not a stream is cut as soon
// as its client leaves, as before, and so is one whose answer is a stream without a drain.
func TestStreamDrainCutsAnAnswerThatIsNoStream(t *testing.T) {
	client, leave := context.WithCancel(context.Background())
	call := keepStreaming(client)
	defer call.end()
	d := newStreamDrain(httptest.NewRecorder(), client, call)
	d.Header().Set("Content-Type", "application/json")
	d.WriteHeader(http.StatusOK)
	leave()
	awaitCut(t, call, "a JSON answer's call outlived its client")

	client, leave = context.WithCancel(context.Background())
	defer leave()
	create := keepCreating(client, time.Hour) // a create without a drain: an image stream
	defer create.end()
	d = newStreamDrain(httptest.NewRecorder(), client, create)
	d.Header().Set("Content-Type", "text/event-stream")
	d.WriteHeader(http.StatusOK)
	leave()
	awaitCut(t, create, "a stream without a drain outlived its client")
}

// TestStreamDrainStartsWhenAWriteFails: a client whose write fails has left, though its context
// has not ended yet: the drain starts then.
func TestStreamDrainStartsWhenAWriteFails(t *testing.T) {
	client, leave := context.WithCancel(context.Background())
	defer leave()
	call := keepStreaming(client)
	call.drainStreams(50 * time.Millisecond)
	defer call.end()
	d := newStreamDrain(resetClientWriter{httptest.NewRecorder()}, client, call)
	d.Header().Set("Content-Type", "text/event-stream")
	d.WriteHeader(http.StatusOK)
	if n, err := d.Write([]byte("data: 1\n\n")); n != 9 || err != nil {
		t.Fatalf("a write that failed on the client: %d %v, want it taken", n, err)
	}
	awaitCut(t, call, "the drain did not start when the write failed")
}

type resetClientWriter struct{ *httptest.ResponseRecorder }

func (resetClientWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset") }

// awaitCut waits until call's context is cancelled; failure says what went wrong when it is not
// within 5 s.
func awaitCut(t *testing.T, call *keptCreate, failure string) {
	t.Helper()
	select {
	case <-call.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal(failure)
	}
}
