package caddymodule

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/auth"
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

// forwardedAllowed reports whether id's allow_ips allow every address that a request's client IP
// headers name, when it came through a trusted proxy of a server that reads those headers
// leniently (no trusted_proxies_strict). Caddy's client IP is then the leftmost valid address,
// which the client can write itself in front of what the proxy appends; so each address must
// be allowed, not only that one. Otherwise (no trusted proxy, or strict reading: the first
// address from the right that is no trusted proxy) Caddy's client IP alone decides, and this
// reports true.
func forwardedAllowed(r *http.Request, id auth.Identity) bool {
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if srv == nil || srv.TrustedProxiesStrict > 0 {
		return true
	}
	if trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); !trusted {
		return true
	}
	for _, name := range srv.ClientIPHeaders {
		for _, value := range r.Header.Values(name) {
			for part := range strings.SplitSeq(value, ",") {
				// Read as Caddy reads them: a port may be kept, a zone is dropped, junk is skipped.
				host, _, err := net.SplitHostPort(strings.TrimSpace(part))
				if err != nil {
					host = part
				}
				host, _, _ = strings.Cut(strings.TrimSpace(host), "%")
				if addr, err := netip.ParseAddr(host); err == nil && !id.AllowsAddr(addr) {
					return false
				}
			}
		}
	}
	return true
}

// requestReplacer is replacer(r) for a handler after mediagw_auth: when w is the request's
// observed writer (the handler right after mediagw_auth, as configured), the replacer that
// mediagw_auth looked up, which is the request's (Caddy makes one a request, in the context that
// every later handler's request derives from); otherwise it is looked up. The lookup walks the
// request's whole context chain.
func requestReplacer(w http.ResponseWriter, r *http.Request) *caddy.Replacer {
	if ow, ok := w.(*observedWriter); ok && ow.repl != nil {
		return ow.repl
	}
	return replacer(r)
}

// replacer returns the request's placeholder replacer.
func replacer(r *http.Request) *caddy.Replacer {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	return repl
}
