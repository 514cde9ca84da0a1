package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// appFrom returns the mediagw app that a handler module shares.
func appFrom(ctx caddy.Context) (*App, error) {
	v, err := ctx.AppIfConfigured("mediagw")
	if errors.Is(err, caddy.ErrNotConfigured) {
		return nil, fmt.Errorf("mediagw handlers need the mediagw global option: add `mediagw { … }` to the global options block at the top of the Caddyfile (an empty `mediagw` block is enough)")
	}
	if err != nil {
		// The app is configured but could not start: its own error says why.
		return nil, err
	}
	return v.(*App), nil
}

// clientIP is the address Caddy determined for the client, honouring trusted_proxies.
func clientIP(r *http.Request) netip.Addr {
	s, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	addr, _ := netip.ParseAddr(s)
	return addr
}

// replacer returns the request's placeholder replacer.
func replacer(r *http.Request) *caddy.Replacer {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	return repl
}
