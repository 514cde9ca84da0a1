package caddymodule

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/videotask"
)

// WatcherConfig tunes the task watcher, which polls every unfinished video task so that stored
// statuses stay current and callbacks fire without client polling.
type WatcherConfig struct {
	// Interval between two polls of one task. Default: 5s.
	Interval caddy.Duration `json:"interval,omitempty"`
	// Concurrency bounds the watcher's reads of upstreams in flight beyond each upstream's first
	// (a read being one upstream's due tasks of one poll): an upstream with none in flight may
	// always start one, and further reads share the concurrency, each upstream's share
	// shrinking with the number of upstreams that have work; so upstreams whose reads hang,
	// however many, delay only their own tasks. Default: 8.
	Concurrency int `json:"concurrency,omitempty"`
	// MaxRPS bounds upstream polls per second. Default: 50. The watcher keeps each task within
	// its interval for up to interval × max_rps unfinished tasks (250 at the defaults).
	MaxRPS float64 `json:"max_rps,omitempty"`
}

// CallbacksConfig configures callback deliveries (callback_url of video tasks).
type CallbacksConfig struct {
	// Secret is the gateway's webhook secret, "whsec_" and base64 bytes, written as {env.*} or
	// {file.*}. Each account signs with a secret derived from it (shown by the admin API).
	// Default: one generated on first start and kept in the store.
	Secret string `json:"secret,omitempty"`
	// AllowPrivate lets callbacks reach loopback and private addresses. For development and
	// tests only. Default: false (only public addresses are dialled).
	AllowPrivate bool `json:"allow_private,omitempty"`
	// RetrySchedule is the wait before each retry. Default: 5s 30s 2m 10m 30m 1h 2h 4h 8h 8h.
	RetrySchedule []caddy.Duration `json:"retry_schedule,omitempty"`
	// Concurrency bounds simultaneous deliveries. Default: 8. One account has at most half of
	// them.
	Concurrency int `json:"concurrency,omitempty"`
	// PerHost bounds simultaneous deliveries to one receiver (host and port), so that a slow or
	// silent receiver cannot hold every delivery slot. Default: 2.
	PerHost int `json:"per_host,omitempty"`
	// AttemptTimeout bounds one delivery attempt (connecting, sending, and the receiver's
	// answer). An event being delivered is withheld from other gateways on the store for three
	// attempt timeouts, so when a gateway dies mid-delivery another one delivers the event after
	// that. Default: 10s.
	AttemptTimeout caddy.Duration `json:"attempt_timeout,omitempty"`
	// RelayBase is this gateway's public base URL (e.g. https://api.example.com). When set,
	// tasks are created upstream with a callback to RelayBase/mediagw/callbacks/<token>, served
	// by mediagw_callback_relay; each such callback is a hint to re-read the task. Default: off.
	RelayBase string `json:"relay_base,omitempty"`
}

// taskRuntime is what the app runs in the background for video tasks: the watcher and the
// callback outbox.
type taskRuntime struct {
	tasks   *videotask.Handler
	watcher *videotask.Watcher
	outbox  *callbacks.Outbox
	key     []byte
	stop    chan struct{}
	done    sync.WaitGroup
}

// provisionTaskRuntime prepares the watcher and the outbox; Start runs them.
func (a *App) provisionTaskRuntime(repl *caddy.Replacer) error {
	cb := CallbacksConfig{}
	if a.Callbacks != nil {
		cb = *a.Callbacks
	}
	secret, err := expandRequired(repl, "callbacks secret", cb.Secret)
	if err != nil {
		return err
	}
	relayBase, err := expandRequired(repl, "callbacks relay_base", cb.RelayBase)
	if err != nil {
		return err
	}
	if relayBase != "" {
		u, err := url.Parse(relayBase)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("callbacks relay_base %q: give this gateway's public base URL, such as https://api.example.com (upstreams call it at <relay_base>/mediagw/callbacks/<token>)", relayBase)
		}
	}
	key, err := a.webhookKey(secret)
	if err != nil {
		return err
	}
	rt := &taskRuntime{key: key}
	rt.tasks = &videotask.Handler{
		Catalog: a.catalog, Store: a.store, Client: a.upstreamClient(videotask.DefaultUpstreamTimeout),
		Retention: a.taskRetention(), Accounting: a.accountant, Logger: a.logger.Named("watcher"),
		RelayBase: relayBase, Keep: a.keeper(),
	}
	var schedule []time.Duration
	for _, d := range cb.RetrySchedule {
		schedule = append(schedule, time.Duration(d))
	}
	attempt := time.Duration(cb.AttemptTimeout)
	if attempt <= 0 {
		attempt = callbacks.DefaultAttemptTimeout
	}
	rt.outbox = &callbacks.Outbox{
		Store: a.store, Key: key, Client: callbacks.NewClientTimeout(cb.AllowPrivate, attempt), AllowPrivate: cb.AllowPrivate,
		Schedule: schedule, Concurrency: cb.Concurrency, PerHost: cb.PerHost, AttemptTimeout: attempt,
		OnGone: rt.tasks.CallbackGone, Stopped: rt.tasks.CallbacksStopped, Logger: a.logger.Named("callbacks"),
		KeepDeliveries: a.taskRetention(),
	}
	rt.tasks.Callbacks = rt.outbox
	w := WatcherConfig{}
	if a.Watcher != nil {
		w = *a.Watcher
	}
	rt.watcher = &videotask.Watcher{Tasks: rt.tasks, Interval: time.Duration(w.Interval), Concurrency: w.Concurrency, RatePerSecond: w.MaxRPS}
	a.runtime = rt
	return nil
}

// webhookKey is the configured secret's key, or the one kept in the store (made on first use).
func (a *App) webhookKey(configured string) ([]byte, error) {
	if configured != "" {
		key, err := callbacks.ParseSecret(configured)
		if err != nil {
			return nil, fmt.Errorf("callbacks secret: %v", err)
		}
		return key, nil
	}
	stored, err := a.store.SettingOnce(context.Background(), "webhook-secret", []byte(callbacks.NewSecret()))
	if err != nil {
		return nil, fmt.Errorf("callbacks secret: %v", err)
	}
	return callbacks.ParseSecret(string(stored))
}

// start runs the watcher, the outbox, the count of active tasks and each of more (a loop that
// returns once stop is closed) until halt.
func (rt *taskRuntime) start(more ...func(stop <-chan struct{})) {
	stop := make(chan struct{})
	rt.stop = stop
	rt.done.Add(3 + len(more))
	for _, run := range more {
		go func() { defer rt.done.Done(); run(stop) }()
	}
	// The goroutines use stop, not rt.stop: halt clears the field, and they may start after it
	// did.
	go func() {
		defer rt.done.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-stop; cancel() }()
		countActiveTasks(ctx, rt.tasks.Store, rt.tasks.Logger)
	}()
	go func() { defer rt.done.Done(); rt.watcher.Run(stop) }()
	go func() { defer rt.done.Done(); rt.outbox.Run(stop) }()
}

func (rt *taskRuntime) halt() {
	if rt.tasks.Keep != nil {
		rt.tasks.Keep.Stop() // its copies give their leases back, for the next config's Keeper
	}
	if rt.stop != nil {
		close(rt.stop)
		rt.done.Wait()
		rt.stop = nil
	}
	rt.tasks.Client.CloseIdleConnections()
}
