package usage

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// maxRecordLoggers bounds the child loggers a Recorder keeps: each holds its fields encoded
// (one to two kilobytes per log that takes the records: the encoder's clone and its buffer).
const maxRecordLoggers = 1024

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
// each record encodes only its own fields after them. At most maxRecordLoggers are kept; a new
// one past that replaces one at random. The child used last is tried first: a client's requests
// often come in runs.
type recordLoggers struct {
	last     atomic.Pointer[recordChild]
	mu       sync.Mutex
	parent   *zap.Logger // the logger the children are made from
	children map[recordFields]*recordChild
}

// recordChild is a child logger of parent that carries fields.
type recordChild struct {
	fields recordFields
	parent *zap.Logger
	logger *zap.Logger
}

// child returns the child of parent that carries rec's repeating fields.
func (l *recordLoggers) child(parent *zap.Logger, rec *Record) *zap.Logger {
	key := recordFields{rec.Event, rec.Account, rec.KeyID, rec.Endpoint, rec.Model, rec.Provider, rec.Upstream, rec.Cost, rec.Status}
	if c := l.last.Load(); c != nil && c.parent == parent && c.fields == key {
		return c.logger
	}
	l.mu.Lock()
	if l.parent != parent {
		l.parent, l.children = parent, make(map[recordFields]*recordChild)
	}
	c := l.children[key]
	l.mu.Unlock()
	if c == nil {
		c = &recordChild{fields: key, parent: parent, logger: parent.With(
			zap.String("event", key.event),
			zap.String("account", key.account),
			zap.String("key_id", key.keyID),
			zap.String("endpoint", key.endpoint),
			zap.String("model", key.model),
			zap.String("provider", key.provider),
			zap.String("upstream", key.upstream),
			zap.Int64("cost", key.cost),
			zap.String("status", key.status),
		)}
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
