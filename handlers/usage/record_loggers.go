package usage

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// maxRecordLoggers bounds the child loggers a Recorder keeps: each holds its fields encoded
// (one to two kilobytes per log that takes the records: the encoder's clone and its buffer).
const maxRecordLoggers = 1024

// admitEvery is how many records of fields without a child, once maxRecordLoggers are kept, make
// one child (in place of one at random); the others are written with all their fields. Making a
// child costs several records' encoding, so that more sets of fields in turn than are kept (many
// keys) cost about what they cost without children, while those that recur get theirs.
const admitEvery = 16

// recordFields are the fields of a record that repeat from record to record: those of one key on
// one route, with the event, cost and status of most of its answers. They are the first fields
// of a record, in the order it is written.
type recordFields struct {
	event, account, keyID, endpoint string
	model, provider, upstream       string
	cost                            int64
	status                          string
}

// recordLoggers keeps, per recordFields, a child of the usage logger that carries them
// (Logger.With), so that they are encoded once, through the log's encoder and its filters, and
// each record encodes only its own fields after them. At most maxRecordLoggers are kept (see
// admitEvery). The child used last is tried first: a client's requests often come in runs.
type recordLoggers struct {
	last     atomic.Pointer[recordChild]
	mu       sync.Mutex
	parent   *zap.Logger // the logger the children are made from
	children map[recordFields]*recordChild
	misses   int // records without a child once the children are full
}

// recordChild is a child logger of parent that carries fields.
type recordChild struct {
	fields recordFields
	parent *zap.Logger
	logger *zap.Logger
}

// child returns the child of parent that carries rec's repeating fields, or nil when rec is to
// be written with all its fields to parent.
func (l *recordLoggers) child(parent *zap.Logger, rec *Record) *zap.Logger {
	key := recordFieldsOf(rec)
	if c := l.last.Load(); c != nil && c.parent == parent && c.fields == key {
		return c.logger
	}
	l.mu.Lock()
	if l.parent != parent {
		l.parent, l.children, l.misses = parent, make(map[recordFields]*recordChild), 0
	}
	c := l.children[key]
	if c == nil && len(l.children) >= maxRecordLoggers {
		if l.misses++; l.misses%admitEvery != 0 {
			l.mu.Unlock()
			return nil
		}
	}
	l.mu.Unlock()
	if c == nil {
		c = &recordChild{fields: key, parent: parent, logger: parent.With(key.appendFields(make([]zap.Field, 0, 9))...)}
		l.mu.Lock()
		if l.parent == parent {
			if len(l.children) >= maxRecordLoggers {
				for k := range l.children { // map order is random
					delete(l.children, k)
					break
				}
			}
			l.children[key] = c
		}
		l.mu.Unlock()
	}
	l.last.Store(c)
	return c.logger
}

// recordFieldsOf are rec's repeating fields.
func recordFieldsOf(rec *Record) recordFields {
	return recordFields{rec.Event, rec.Account, rec.KeyID, rec.Endpoint, rec.Model, rec.Provider, rec.Upstream, rec.Cost, rec.Status}
}

// appendFields appends the log fields of f to dst, in a record's order.
func (f *recordFields) appendFields(dst []zap.Field) []zap.Field {
	return append(dst,
		zap.String("event", f.event),
		zap.String("account", f.account),
		zap.String("key_id", f.keyID),
		zap.String("endpoint", f.endpoint),
		zap.String("model", f.model),
		zap.String("provider", f.provider),
		zap.String("upstream", f.upstream),
		zap.Int64("cost", f.cost),
		zap.String("status", f.status),
	)
}
