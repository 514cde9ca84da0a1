package caddymodule

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/videotask"
)

func init() {
	caddy.RegisterModule(VideosHandler{})
}

// VideosHandler serves the OpenAI-style video API under /v1/videos over the same task table as
// mediagw_video_tasks: create (POST /v1/videos), retrieve (GET /v1/videos/{id}), list (GET
// /v1/videos, the caller's own, by cursor), delete (DELETE /v1/videos/{id}) and content (GET
// /v1/videos/{id}/content). It must follow mediagw_auth and come before mediagw_route. It needs
// no path matcher: it answers every request on /v1/videos or a path below it (/v1/videos/…),
// spelled exactly so, 404 not_found for one that is no endpoint, and passes every other request
// to the next handler (/v1/videosX, /V1/VIDEOS, //v1/videos go on too).
//
// A create reaches every provider whatever its protocol, with the task API's checks, limits,
// billing hold, idempotency, callbacks and watcher; a video's id is its task id. A file in a
// create body is refused with 400: reference images are public URLs (see /v1/upload/presign).
// Without this handler in a route, /v1/videos passes through mediagw_route to the provider that
// serves the model, as before; with it, only the providers named by passthrough do.
type VideosHandler struct {
	VideoTaskSettings
	// PassThrough names providers that serve /v1/videos themselves: a create for one of their
	// models, and every call on a video made there, goes on to the next handler (mediagw_route
	// and its reverse_proxy) unchanged. Each name must be a configured provider.
	PassThrough []string `json:"passthrough,omitempty"`

	front *videotask.VideosFront
	log   credentialSafeLog
}

// CaddyModule returns the Caddy module information.
func (VideosHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_videos",
		New: func() caddy.Module { return new(VideosHandler) },
	}
}

// Provision finds the mediagw app and checks the pass-through providers.
func (h *VideosHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	for _, name := range h.PassThrough {
		if _, ok := app.Catalog().Provider(name); !ok {
			return fmt.Errorf("mediagw_videos: passthrough names %q, which is not a provider of the mediagw app", name)
		}
	}
	h.front = &videotask.VideosFront{
		Tasks:           app.videoTasks(ctx, h.VideoTaskSettings),
		PassThrough:     slices.Clone(h.PassThrough),
		PassThroughKind: passthrough.KindVideo,
	}
	h.log = newCredentialSafeLog(ctx)
	return nil
}

// Cleanup closes idle upstream connections.
func (h *VideosHandler) Cleanup() error {
	if h.front != nil {
		h.front.Tasks.Client.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP serves the front. A content call's access log entry is written by the handler
// (credentialSafeLog), with the redirect's Location cut before its query: the 302 to a kept
// result in a private bucket, or to a provider's signed address, carries a presigned URL, which
// Caddy's own entry would print among the answer's headers.
func (h *VideosHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !videotask.OwnsVideosPath(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	serve := func(w http.ResponseWriter, r *http.Request) error { return h.front.ServeHTTP(w, r, next.ServeHTTP) }
	// The front reads /{id}/content/ as /{id}/content (it trims the path's slashes): the test
	// is the same, or a trailing slash would put the redirect's signature in Caddy's entry.
	if r.Method != http.MethodGet || !strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/content") {
		return serve(w, r)
	}
	return h.log.serveRedirectable(w, r, serve)
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	mediagw_videos [<matcher>] {
//		refresh_interval <duration>
//		upstream_timeout <duration>
//		max_body_size    <size>
//		passthrough      <provider...>
//	}
func (h *VideosHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	subs := h.subdirectives(d)
	subs["passthrough"] = func() error {
		h.PassThrough = d.RemainingArgs()
		if len(h.PassThrough) == 0 {
			return d.ArgErr()
		}
		return nil
	}
	return parseBlock(d, subs)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*VideosHandler)(nil)
	_ caddy.CleanerUpper          = (*VideosHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*VideosHandler)(nil)
	_ caddyfile.Unmarshaler       = (*VideosHandler)(nil)
)
