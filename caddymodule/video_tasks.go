package caddymodule

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask"
)

func init() {
	caddy.RegisterModule(VideoTasksHandler{})
}

// VideoTasksHandler serves the asynchronous video task API (Ark protocol) under
// /api/v3/contents/generations/tasks: create (POST), query (GET /{id}), list (GET) and cancel
// (DELETE /{id}). It must follow mediagw_auth. It needs no path matcher: it answers every
// request on /api/v3/contents/generations/tasks or a path below it (…/tasks/…), spelled exactly
// so, 404 not_found in the task API's shape for one that is no endpoint, and passes every other
// request to the next handler (…/tasksX, /API/V3/…, //api/v3/… go on too).
//
// The provider is chosen by the request's model. The owning account of every task is recorded in
// the store before the id is returned; other accounts are told the task does not exist. Finished
// results are served from the store; an unfinished task is read from its upstream at most once per
// refresh_interval, however often clients poll. Lists are served from the store.
type VideoTasksHandler struct {
	VideoTaskSettings

	tasks *videotask.Handler
}

// VideoTaskSettings are the settings of a handler that fronts the video tasks
// (mediagw_video_tasks, mediagw_videos).
type VideoTaskSettings struct {
	// RefreshInterval is the least time between two upstream reads of one unfinished task.
	// Default: 1s.
	RefreshInterval caddy.Duration `json:"refresh_interval,omitempty"`
	// UpstreamTimeout bounds each upstream call; past it the client gets 504. Default: 60s.
	UpstreamTimeout caddy.Duration `json:"upstream_timeout,omitempty"`
	// MaxBodySize bounds a create request body in bytes; past it the client gets 413. Default: 1 MiB.
	MaxBodySize int64 `json:"max_body_size,omitempty"`
}

// subdirectives parses the settings' subdirectives of a Caddyfile block.
func (s *VideoTaskSettings) subdirectives(d *caddyfile.Dispenser) map[string]func() error {
	return map[string]func() error{
		"refresh_interval": func() error { return durationArg(d, &s.RefreshInterval) },
		"upstream_timeout": func() error { return durationArg(d, &s.UpstreamTimeout) },
		"max_body_size":    func() error { return sizeArg(d, &s.MaxBodySize) },
	}
}

// CaddyModule returns the Caddy module information.
func (VideoTasksHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_video_tasks",
		New: func() caddy.Module { return new(VideoTasksHandler) },
	}
}

// Provision finds the mediagw app and prepares the upstream client.
func (h *VideoTasksHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.tasks = app.videoTasks(ctx, h.VideoTaskSettings)
	return nil
}

// videoTasks is the task machinery of a handler that fronts video tasks (the task API, the
// OpenAI-style video API), with the handler's own settings.
func (a *App) videoTasks(ctx caddy.Context, s VideoTaskSettings) *videotask.Handler {
	return &videotask.Handler{
		Catalog:         a.Catalog(),
		Store:           a.Store(),
		Client:          a.upstreamClient(time.Duration(s.UpstreamTimeout)),
		Retention:       a.taskRetention(),
		RefreshInterval: time.Duration(s.RefreshInterval),
		MaxBodyBytes:    s.MaxBodySize,
		Accounting:      a.Accountant(),
		Idempotency:     a.Idempotency(),
		Callbacks:       a.runtime.outbox,
		RelayBase:       a.runtime.tasks.RelayBase,
		Watcher:         a.runtime.watcher,
		Keep:            a.runtime.tasks.Keep,
		Logger:          ctx.Logger(),
	}
}

// Cleanup closes idle upstream connections.
func (h *VideoTasksHandler) Cleanup() error {
	if h.tasks != nil {
		h.tasks.Client.CloseIdleConnections()
	}
	return nil
}

func (h *VideoTasksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !videotask.OwnsTaskPath(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	h.tasks.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	mediagw_video_tasks [<matcher>] {
//		refresh_interval <duration>
//		upstream_timeout <duration>
//		max_body_size    <size>
//	}
func (h *VideoTasksHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, h.subdirectives(d))
}

// upstreamClient is the HTTP client for the gateway's own calls to providers: bounded by timeout
// (videotask.DefaultUpstreamTimeout when not positive), following no redirects, and using the
// environment's proxy settings only with upstream_proxy_from_env.
func (a *App) upstreamClient(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = videotask.DefaultUpstreamTimeout
	}
	return upstream.NewHTTPClient(upstream.ClientOptions{Timeout: timeout, ProxyFromEnvironment: a.UpstreamProxyFromEnv})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*VideoTasksHandler)(nil)
	_ caddy.CleanerUpper          = (*VideoTasksHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*VideoTasksHandler)(nil)
	_ caddyfile.Unmarshaler       = (*VideoTasksHandler)(nil)
)
