package caddymodule

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/providers"
)

// publishRoute adds to repl the placeholders that mediagw_route publishes for the handlers after
// it ({mediagw.model}, {mediagw.provider}, {mediagw.upstream}, {mediagw.upstream_name}),
// answered from the routed request's dispatch d (the client's model, its provider, the upstream
// tried first) when they are read: one value provider instead of four map entries. A value that
// the mediagw transport sets for a later attempt (see publishUpstream) takes precedence, since
// the replacer reads its set values first.
func publishRoute(repl *caddy.Replacer, d *providers.Dispatch) {
	repl.Map(func(key string) (any, bool) {
		switch key {
		case "mediagw.model":
			return d.Model, true
		case "mediagw.provider":
			return d.Provider.Name, true
		case "mediagw.upstream":
			return d.First().Origin(), true
		case "mediagw.upstream_name":
			return d.First().Name, true
		}
		return nil, false
	})
}
