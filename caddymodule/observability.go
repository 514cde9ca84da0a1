package caddymodule

import (
	"context"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

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
		Index:    usageIndex{store: opened.store},
	}
	a.accountant.Usage = a.usage
	a.observer = &observer{usage: a.usage, now: time.Now}
	return nil
}

// usageIndex keeps the index of usage aggregates with the store's counters and settings: per
// day, a counter numbers the (account, model) pairs seen, and a setting per number names its
// pair. It is the one place that knows how the aggregates use the store besides its counters.
type usageIndex struct{ store storage.Store }

func usageIndexCounter(day string) string { return "usage/index/" + day }

func (x usageIndex) Mark(ctx context.Context, day, key string) error {
	n, _, err := x.store.AddCounter(ctx, usageIndexCounter(day), 1, -1)
	if err != nil {
		return err
	}
	slot := fmt.Sprintf("%s/%d", usageIndexCounter(day), n)
	got, err := x.store.SettingOnce(ctx, slot, []byte(key))
	if err == nil && string(got) != key {
		// A report read the number before this name was stored, and so claimed it empty: the
		// pair is not indexed yet, and the caller must mark it again (under a new number).
		err = fmt.Errorf("usage index %s was read empty before it was named", slot)
	}
	return err
}

func (x usageIndex) Marked(ctx context.Context, day string, fn func(key string)) error {
	n, err := x.store.Counter(ctx, usageIndexCounter(day))
	if err != nil {
		return err
	}
	for i := int64(1); i <= n; i++ {
		// A number whose name was never stored (a crash between the two writes) reads as empty.
		key, err := x.store.SettingOnce(ctx, fmt.Sprintf("%s/%d", usageIndexCounter(day), i), []byte{})
		if err != nil {
			return err
		}
		if len(key) > 0 {
			fn(string(key))
		}
	}
	return nil
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
