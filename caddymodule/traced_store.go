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
// "store <operation>"). The operations on a request's path are traced; the others pass straight
// through. Without a recording span in the context it adds one context lookup.
type tracedStore struct {
	storage.Store
	backend string
}

func (s *tracedStore) span(ctx context.Context, op string) (context.Context, tracing.Span) {
	if !tracing.Recording(ctx) {
		return ctx, tracing.Span{} // no span name or attribute built for an untraced request
	}
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

func (s *tracedStore) AllowRate(ctx context.Context, name string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	ctx, span := s.span(ctx, "AllowRate")
	ok, wait, err := s.Store.AllowRate(ctx, name, limit, window, now)
	span.End(err)
	return ok, wait, err
}

func (s *tracedStore) CreateTask(ctx context.Context, task storage.Task) (storage.Task, error) {
	ctx, span := s.span(ctx, "CreateTask")
	t, err := s.Store.CreateTask(ctx, task)
	span.End(err)
	return t, err
}

func (s *tracedStore) Task(ctx context.Context, id string) (storage.Task, error) {
	ctx, span := s.span(ctx, "Task")
	t, err := s.Store.Task(ctx, id)
	span.End(err)
	return t, err
}

func (s *tracedStore) ReplaceTask(ctx context.Context, task storage.Task) (storage.Task, error) {
	ctx, span := s.span(ctx, "ReplaceTask")
	t, err := s.Store.ReplaceTask(ctx, task)
	span.End(err)
	return t, err
}

func (s *tracedStore) ListTasks(ctx context.Context, account string, q storage.TaskQuery) (storage.TaskPage, error) {
	ctx, span := s.span(ctx, "ListTasks")
	p, err := s.Store.ListTasks(ctx, account, q)
	span.End(err)
	return p, err
}

func (s *tracedStore) EnqueueEvent(ctx context.Context, ev storage.Event) (bool, error) {
	ctx, span := s.span(ctx, "EnqueueEvent")
	ok, err := s.Store.EnqueueEvent(ctx, ev)
	span.End(err)
	return ok, err
}

func (s *tracedStore) BeginIdempotent(ctx context.Context, key string, rec storage.IdempotencyRecord, ttl time.Duration) (storage.IdempotencyRecord, bool, error) {
	ctx, span := s.span(ctx, "BeginIdempotent")
	r, ok, err := s.Store.BeginIdempotent(ctx, key, rec, ttl)
	span.End(err)
	return r, ok, err
}

func (s *tracedStore) ClaimItems(ctx context.Context, account string, ids []string, expiresAt time.Time) ([]string, error) {
	ctx, span := s.span(ctx, "ClaimItems")
	taken, err := s.Store.ClaimItems(ctx, account, ids, expiresAt)
	span.End(err)
	return taken, err
}

func (s *tracedStore) ItemOwners(ctx context.Context, ids []string) ([]string, error) {
	ctx, span := s.span(ctx, "ItemOwners")
	owners, err := s.Store.ItemOwners(ctx, ids)
	span.End(err)
	return owners, err
}

// Interface guards
var _ storage.Store = (*tracedStore)(nil)
