package usage

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/money"
)

// Record events.
const (
	// EventRequest is an accepted request; its amount is the money its hold was settled at (0
	// when the upstream refused it and the hold was released).
	EventRequest = "request"
	// EventTaskCreated is a request that created a video task; the task's money is settled
	// when it finishes.
	EventTaskCreated = "task_created"
	// EventTaskFinished is a task first seen in a terminal status; its amount is what its
	// settlement charged (0 for a task that did not succeed: its hold was released).
	EventTaskFinished = "task_finished"
)

// Record is one usage record. The sum of Amount over an account's records is the money it was
// charged. Cost is the flat cost units of records written before billing in money (the cost
// directive is now a request price): new records leave it 0.
type Record struct {
	Event          string
	Time           time.Time
	Account, KeyID string
	Endpoint       string
	Model          string
	Provider       string
	Upstream       string
	TaskID         string
	Cost           int64
	// Amount is the money charged, in micro-units of the gateway's currency: a request's
	// settlement, a finished task's settlement (a released hold charges 0). Holds are not
	// charges. The sum of Amount over an account's records is the money it spent.
	Amount          int64
	Status          string // HTTP status, or the task status of EventTaskFinished
	UpstreamLatency time.Duration
	Tokens          Tokens
	TraceID         string
}

// Counters is what the aggregates need from the store: counters added in batches and read
// back with what is not stored yet (accounting.Meter is one).
type Counters interface {
	// AddAll counts deltas[i] under names[i], each i, at once; a zero delta changes nothing.
	AddAll(names []string, deltas []int64)
	Value(ctx context.Context, name string) (int64, error)
}

// Index remembers which (account, model) aggregates exist on each day, so that reports can find
// them.
type Index interface {
	// Mark records key under day; a key marked twice is reported twice, and reports merge them.
	Mark(ctx context.Context, day, key string) error
	// Marked calls fn for every key marked under day.
	Marked(ctx context.Context, day string, fn func(key string)) error
}

// Recorder writes usage records to its logger and adds them to the aggregates.
type Recorder struct {
	// Logger receives one entry per record; name it mediagw.usage.
	Logger *zap.Logger
	// Counters and Index keep the aggregates; when nil, only the log is written.
	Counters Counters
	Index    Index
	// Now is the clock of reports' default days. Default: time.Now.
	Now func() time.Time

	loggers recordLoggers // children of Logger with the fields that repeat

	mu           sync.Mutex
	day          aggDay                   // the day of names
	names        map[aggPair]*aggCounters // counter names of day's aggregates, marked in the index
	lastCounters atomic.Pointer[aggCounters]
}

// Write writes one record: the log entry, the per-day aggregates and the spend metric.
func (r *Recorder) Write(rec Record) {
	if r == nil {
		return
	}
	if rec.Amount > 0 {
		metrics.Spent(rec.Account, rec.Model, rec.Amount)
	}
	r.aggregate(rec)
	if !r.Logger.Core().Enabled(zapcore.InfoLevel) {
		return // records are not logged: no child logger to make
	}
	logger := r.loggers.child(r.Logger, &rec)
	if logger == nil {
		logger = r.Logger
	}
	ce := logger.Check(zapcore.InfoLevel, rec.Event)
	if ce == nil {
		return
	}
	pooled := fieldLists.Get().(*[]zap.Field)
	defer func() { *pooled = (*pooled)[:0]; fieldLists.Put(pooled) }()
	fields := (*pooled)[:0]
	if logger == r.Logger { // no child carries the fields up to status (see recordLoggers)
		repeating := recordFieldsOf(&rec)
		fields = repeating.appendFields(fields)
	}
	fields = append(fields, zap.Float64("upstream_latency", rec.UpstreamLatency.Seconds()))
	if rec.TaskID != "" {
		fields = append(fields, zap.String("task_id", rec.TaskID))
	}
	if rec.Amount != 0 {
		fields = append(fields, zap.String("amount", money.Format(rec.Amount)))
	}
	if rec.Tokens.Known() {
		fields = append(fields,
			zap.Int64("prompt_tokens", rec.Tokens.Prompt),
			zap.Int64("completion_tokens", rec.Tokens.Completion),
			zap.Int64("total_tokens", rec.Tokens.Total))
	}
	if rec.TraceID != "" {
		fields = append(fields, zap.String("trace_id", rec.TraceID))
	}
	ce.Time = rec.Time
	ce.Write(fields...)
}

// fieldLists holds field slices between records (a record has up to 16 fields).
var fieldLists = sync.Pool{New: func() any { f := make([]zap.Field, 0, 16); return &f }}

// statusText is status in decimal; the texts of 100 to 599 are made once, not for every record.
func statusText(status int) string {
	if status >= 100 && status < 100+len(statusTexts) {
		return statusTexts[status-100]
	}
	return strconv.Itoa(status)
}

var statusTexts = func() (texts [500]string) {
	for i := range texts {
		texts[i] = strconv.Itoa(100 + i)
	}
	return texts
}()
