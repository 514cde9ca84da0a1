package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// All of mediagw's Caddyfile registrations, in one place so the order is easy to read:
//
//	mediagw_callback_relay, basic_auth, mediagw_auth, … , mediagw_simulator, mediagw_models, mediagw_presign,
//	mediagw_video_tasks, mediagw_videos, mediagw_image_edits, mediagw_route, mediagw_console,
//	reverse_proxy
//
// Authentication runs before everything else of mediagw; the endpoint handlers come next; the
// pass-through router runs last, just before the reverse_proxy blocks it prepares.
func init() {
	httpcaddyfile.RegisterGlobalOption("mediagw", parseGlobalOption)

	httpcaddyfile.RegisterHandlerDirective("mediagw_callback_relay", parseNoArgs[CallbackRelayHandler])
	httpcaddyfile.RegisterDirectiveOrder("mediagw_callback_relay", httpcaddyfile.Before, "basic_auth")
	httpcaddyfile.RegisterHandlerDirective("mediagw_auth", parseNoArgs[AuthHandler])
	httpcaddyfile.RegisterDirectiveOrder("mediagw_auth", httpcaddyfile.After, "basic_auth")

	for _, dir := range []struct {
		name  string
		setup httpcaddyfile.UnmarshalHandlerFunc
	}{
		{"mediagw_simulator", parseUnmarshaler[SimulatorHandler]},
		{"mediagw_models", parseNoArgs[ModelsHandler]},
		{"mediagw_presign", parseNoArgs[PresignHandler]},
		{"mediagw_video_tasks", parseUnmarshaler[VideoTasksHandler]},
		{"mediagw_videos", parseUnmarshaler[VideosHandler]},
		{"mediagw_image_edits", parseUnmarshaler[ImageEditsHandler]},
		{"mediagw_route", parseUnmarshaler[RouteHandler]},
		{"mediagw_console", parseUnmarshaler[ConsoleHandler]},
	} {
		httpcaddyfile.RegisterHandlerDirective(dir.name, dir.setup)
		httpcaddyfile.RegisterDirectiveOrder(dir.name, httpcaddyfile.Before, "reverse_proxy")
	}
}

// parseNoArgs sets up a handler directive that takes no arguments and no block (only a matcher):
//
//	mediagw_auth [<matcher>]
//	mediagw_models [<matcher>]
func parseNoArgs[T any, PT interface {
	*T
	caddyhttp.MiddlewareHandler
}](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	if err := noArgs(h.Dispenser); err != nil {
		return nil, err
	}
	return PT(new(T)), nil
}

// noArgs consumes the directive name and refuses arguments and blocks.
func noArgs(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("%s takes no block", d.Val())
	}
	return nil
}

// parseUnmarshaler sets up a handler directive whose module parses its own tokens.
func parseUnmarshaler[T any, PT interface {
	*T
	caddyhttp.MiddlewareHandler
	caddyfile.Unmarshaler
}](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := PT(new(T))
	return m, m.UnmarshalCaddyfile(h.Dispenser)
}
