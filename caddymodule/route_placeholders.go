package caddymodule

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/providers"
)

// routePlaceholders answers the placeholders that mediagw_route publishes for the handlers after
// it ({mediagw.model}, {mediagw.provider}, {mediagw.upstream}, {mediagw.upstream_name}) from the
// routed request's dispatch (the client's model, its provider, the upstream tried first), when
// they are read: routing adds one value provider to the request's replacer instead of four map
// entries. A value that the mediagw transport sets for a later attempt (see publishUpstream)
// takes precedence, since the replacer reads its set values first.
type routePlaceholders struct {
	dispatch *providers.Dispatch
}

// publish adds p to repl.
func (p *routePlaceholders) publish(repl *caddy.Replacer) { repl.Map(p.value) }

func (p *routePlaceholders) value(key string) (any, bool) {
	switch key {
	case "mediagw.model":
		return p.dispatch.Model, true
	case "mediagw.provider":
		return p.dispatch.Provider.Name, true
	case "mediagw.upstream":
		return p.dispatch.First().Origin(), true
	case "mediagw.upstream_name":
		return p.dispatch.First().Name, true
	}
	return nil, false
}
