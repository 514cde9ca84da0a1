package usage

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// lockedBuffer is a log output that tests read back.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) Sync() error { return nil }
func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

func jsonLogger(out *lockedBuffer) *zap.Logger {
	cfg := zapcore.EncoderConfig{MessageKey: "msg", TimeKey: "ts", EncodeTime: zapcore.EpochTimeEncoder}
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), out, zapcore.InfoLevel)).Named("mediagw.usage")
}

// TestRecordLinesAreWholeAndTheirOwn: records that share a key and route (and so a child logger)
// each have every field once, in the documented order, with their own values.
func TestRecordLinesAreWholeAndTheirOwn(t *testing.T) {
	out := &lockedBuffer{}
	r := &Recorder{Logger: jsonLogger(out)}
	at := time.Unix(1700000000, 0)
	rec := Record{Event: EventRequest, Time: at, Account: "acme", KeyID: "key_1", Endpoint: "/v1/chat/completions",
		Model: "m", Provider: "p", Upstream: "u", Status: "200", UpstreamLatency: 1500 * time.Millisecond}
	r.Write(rec)
	second := rec
	second.Amount, second.TraceID, second.UpstreamLatency = 2_500_000, "trace1", time.Second
	second.Tokens = Tokens{Prompt: 1, Completion: 2, Total: 3, known: true}
	r.Write(second)
	third := rec
	third.Status, third.TaskID, third.Event = "completed", "task_9", EventTaskFinished
	r.Write(third)
	r.Write(rec)

	common := `"account":"acme","key_id":"key_1","endpoint":"/v1/chat/completions","model":"m","provider":"p","upstream":"u","cost":0,`
	want := []string{
		`{"ts":1700000000,"msg":"request","event":"request",` + common + `"status":"200","upstream_latency":1.5}`,
		`{"ts":1700000000,"msg":"request","event":"request",` + common + `"status":"200","upstream_latency":1,"amount":"2.5","prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"trace_id":"trace1"}`,
		`{"ts":1700000000,"msg":"task_finished","event":"task_finished",` + common + `"status":"completed","upstream_latency":1.5,"task_id":"task_9"}`,
		`{"ts":1700000000,"msg":"request","event":"request",` + common + `"status":"200","upstream_latency":1.5}`,
	}
	got := out.lines()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(r.loggers.children); n != 2 {
		t.Errorf("%d child loggers, want 2 (a request's and a task's)", n)
	}
}

// TestRecordLoggersStayBounded: past maxRecordLoggers keys, children are replaced, not added,
// and every record, written through a child or with all its fields, is the same but for its key.
func TestRecordLoggersStayBounded(t *testing.T) {
	out := &lockedBuffer{}
	r := &Recorder{Logger: jsonLogger(out)}
	n := maxRecordLoggers + 100
	for i := range n {
		r.Write(Record{Event: EventRequest, Account: "a", KeyID: "key_" + strconv.Itoa(i), Status: "200"})
	}
	if len(r.loggers.children) > maxRecordLoggers {
		t.Fatalf("%d child loggers, more than %d", len(r.loggers.children), maxRecordLoggers)
	}
	lines := out.lines()
	if len(lines) != n {
		t.Fatalf("%d records, want %d", len(lines), n)
	}
	for i, l := range lines {
		if want := strings.Replace(lines[0], `"key_id":"key_0"`, `"key_id":"key_`+strconv.Itoa(i)+`"`, 1); l != want {
			t.Fatalf("record %d is %s, want %s", i, l, want)
		}
	}
}

// TestRecordLoggersFollowTheLogger: a Recorder given another logger (a reload makes a new
// Recorder; this is the same for one kept) writes to it, not through children of the old one.
func TestRecordLoggersFollowTheLogger(t *testing.T) {
	first, second := &lockedBuffer{}, &lockedBuffer{}
	r := &Recorder{Logger: jsonLogger(first)}
	rec := Record{Event: EventRequest, Account: "a", KeyID: "key_1", Status: "200"}
	r.Write(rec)
	r.Logger = jsonLogger(second)
	r.Write(rec)
	if a, b := first.lines(), second.lines(); len(a) != 1 || len(b) != 1 || a[0] != b[0] || !strings.Contains(b[0], `"key_id":"key_1"`) {
		t.Fatalf("first log %q, second log %q", a, b)
	}
}

// TestRecordLoggersConcurrently: records of several keys written at once each carry their own
// key (run with -race).
func TestRecordLoggersConcurrently(t *testing.T) {
	out := &lockedBuffer{}
	r := &Recorder{Logger: jsonLogger(out)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := "key_" + strconv.Itoa((g+i)%3)
				r.Write(Record{Event: EventRequest, Account: "acct_" + key, KeyID: key, Status: "200"})
			}
		})
	}
	wg.Wait()
	lines := out.lines()
	if len(lines) != 8*200 {
		t.Fatalf("%d records, want %d", len(lines), 8*200)
	}
	for _, l := range lines {
		for k := range 3 {
			key := "key_" + strconv.Itoa(k)
			if strings.Contains(l, `"key_id":"`+key+`"`) != strings.Contains(l, `"account":"acct_`+key+`"`) {
				t.Fatalf("a record mixes two keys' fields: %s", l)
			}
		}
	}
}

// TestRecordLoggersNotMadeWhenRecordsAreNotLogged: a logger above Info writes no record, and the
// Recorder makes no child logger for one (each costs an encoder clone and its buffer).
func TestRecordLoggersNotMadeWhenRecordsAreNotLogged(t *testing.T) {
	out := &lockedBuffer{}
	cfg := zapcore.EncoderConfig{MessageKey: "msg"}
	r := &Recorder{Logger: zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), out, zapcore.WarnLevel))}
	for i := range 5 {
		r.Write(Record{Event: "request", Account: "acme", KeyID: "key_" + strconv.Itoa(i), Status: "200"})
	}
	if n := len(r.loggers.children); n != 0 || out.b.Len() != 0 {
		t.Fatalf("%d child loggers and %d bytes written for records a Warn logger drops; want none", n, out.b.Len())
	}
}
