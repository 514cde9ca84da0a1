package caddymodule

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mediagw/mediagw/internal/tracing"
	"github.com/mediagw/mediagw/storage"
)

// tracedStore makes the store operations of a traced request spans of its trace (named
// "store <operation>"). Operations it does not name pass straight through. Without a recording
// span in the context it adds one context lookup.
type tracedStore struct {
	storage.Store
	backend string
}

func (s *tracedStore) span(ctx context.Context, op string) (context.Context, tracing.Span) {
	return tracing.Start(ctx, "store "+op, trace.SpanKindInternal, attribute.String("db.system.name", s.backend))
}

func (s *tracedStore) KeyByHash(ctx context.Context, hash string) (storage.APIKey, error) {
	ctx, span := s.span(ctx, "KeyByHash")
	k, err := s.Store.KeyByHash(ctx, hash)
	span.End(err)
	return k, err
}

func (s *tracedStore) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	ctx, span := s.span(ctx, "AddCounter")
	v, ok, err := s.Store.AddCounter(ctx, name, delta, limit)
	span.End(err)
	return v, ok, err
}

func (s *tracedStore) Claim(ctx context.Context, key string, val []byte, ttl time.Duration) ([]byte, bool, error) {
	ctx, span := s.span(ctx, "Claim")
	existing, claimed, err := s.Store.Claim(ctx, key, val, ttl)
	span.End(err)
	return existing, claimed, err
}

func (s *tracedStore) Record(ctx context.Context, key string) ([]byte, error) {
	ctx, span := s.span(ctx, "Record")
	v, err := s.Store.Record(ctx, key)
	span.End(err)
	return v, err
}

func (s *tracedStore) PutRecord(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	ctx, span := s.span(ctx, "PutRecord")
	err := s.Store.PutRecord(ctx, key, val, ttl)
	span.End(err)
	return err
}

func (s *tracedStore) PutTask(ctx context.Context, task storage.Task) error {
	ctx, span := s.span(ctx, "PutTask")
	err := s.Store.PutTask(ctx, task)
	span.End(err)
	return err
}

func (s *tracedStore) Task(ctx context.Context, id string) (storage.Task, error) {
	ctx, span := s.span(ctx, "Task")
	t, err := s.Store.Task(ctx, id)
	span.End(err)
	return t, err
}

func (s *tracedStore) ListTasks(ctx context.Context, account string, q storage.TaskQuery) (storage.TaskPage, error) {
	ctx, span := s.span(ctx, "ListTasks")
	p, err := s.Store.ListTasks(ctx, account, q)
	span.End(err)
	return p, err
}

// Interface guards
var _ storage.Store = (*tracedStore)(nil)
