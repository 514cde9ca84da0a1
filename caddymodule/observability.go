package caddymodule

import (
	"context"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// usageIndexTTL is how long the index of per-day usage aggregates is kept.
const usageIndexTTL = 400 * 24 * time.Hour

// provisionObservability registers mediagw's metrics on this config's registry (served at the
// admin endpoint's /metrics) and prepares the usage records: the logger mediagw.usage and the
// per-day aggregates in the store.
func (a *App) provisionObservability(ctx caddy.Context) error {
	metrics.SetAccountLabel(!a.NoAccountMetrics)
	if err := metrics.Register(ctx.GetMetricsRegistry(), !a.NoAccountMetrics); err != nil {
		return err
	}
	opened := a.opened
	a.usage = &usage.Recorder{
		Logger:   a.logger.Named("usage"),
		Counters: opened.meter,
		Index:    usageIndex{store: opened.Badger},
	}
	a.accountant.Usage = a.usage
	a.observer = &observer{usage: a.usage, now: time.Now}
	return nil
}

// usageIndex keeps the index of usage aggregates as store records. It is the one place that
// knows how the aggregates use the store besides its counters.
type usageIndex struct{ store storage.Store }

func (x usageIndex) Mark(ctx context.Context, key string) error {
	_, _, err := x.store.Claim(ctx, key, []byte{1}, usageIndexTTL)
	return err
}

func (x usageIndex) Marked(ctx context.Context, prefix string, fn func(key string) bool) error {
	return x.store.ScanRecords(ctx, prefix, func(key string, _ []byte) bool { return fn(key) })
}

// countActiveTasks sets mediagw_tasks_active from the store's unfinished tasks.
func countActiveTasks(ctx context.Context, store storage.Store, logger *zap.Logger) {
	byProvider := map[string]int{}
	err := store.UnfinishedTasks(ctx, func(id string) bool {
		if t, err := store.Task(ctx, id); err == nil && t.Unfinished() {
			byProvider[t.Provider]++
		}
		return ctx.Err() == nil
	})
	if err != nil || ctx.Err() != nil {
		logger.Warn("counting active tasks for mediagw_tasks_active", zap.Error(err))
		return
	}
	metrics.SetActiveTasks(byProvider)
}

// Interface guards
var _ usage.Index = usageIndex{}
