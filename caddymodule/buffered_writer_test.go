package caddymodule

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	// The golden Caddyfile usage_log.caddyfile uses the tracing directive.
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/tracing"
)

// countingWriter records each Write it receives.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	data   bytes.Buffer
	closed bool
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.data.Write(p)
}

func (w *countingWriter) Close() error { w.closed = true; return nil }

func (w *countingWriter) snapshot() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.data.String()
}

// Entries reach the wrapped writer in batches, by the flush interval and on Close.
func TestBufferedLogBatchesEntries(t *testing.T) {
	out := &countingWriter{}
	l := newBufferedLog(out, 1<<16)
	go l.flushEvery(20 * time.Millisecond)
	for range 100 {
		if _, err := l.Write([]byte(`{"msg":"request"}` + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second) // a generous wait: it ends as soon as the condition holds
	for {
		n, data := out.snapshot()
		if n > 0 {
			if n > 2 || len(data) != 100*18 {
				t.Fatalf("%d writes, %d bytes; want the 100 entries in one or two writes", n, len(data))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing was flushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := l.Write([]byte("last\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, data := out.snapshot(); !bytes.HasSuffix([]byte(data), []byte("last\n")) || !out.closed {
		t.Fatalf("Close did not write the rest and close: closed %v", out.closed)
	}
}

// failingWriter fails its first writes, then takes everything.
type failingWriter struct {
	countingWriter
	failures int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.failures > 0 {
		w.failures--
		w.mu.Unlock()
		return 0, errors.New("disk full")
	}
	w.mu.Unlock()
	return w.countingWriter.Write(p)
}

// A failed write of the output loses nothing: the bytes stay buffered and are written once the
// output takes them again (a bufio.Writer would fail every later write instead).
func TestBufferedLogSurvivesAFailedWrite(t *testing.T) {
	out := &failingWriter{failures: 2}
	l := newBufferedLog(out, 64)
	var want bytes.Buffer
	for i := range 20 {
		entry := []byte(`{"n":` + string(rune('a'+i)) + "}\n")
		if _, err := l.Write(entry); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want.Write(entry)
	}
	go l.flushEvery(time.Hour)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, data := out.snapshot(); data != want.String() {
		t.Fatalf("the output got %q, want %q", data, want.String())
	}
}
