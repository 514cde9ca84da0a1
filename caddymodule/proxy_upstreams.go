package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"github.com/mediagw/mediagw/handlers/providers"
)

func init() {
	caddy.RegisterModule(ProxyUpstreams{})
}

// ProxyUpstreams is a dynamic upstream source for reverse_proxy: it yields the upstreams of the
// provider that mediagw_route chose for the request, the one picked for it first and then its
// alternates (same priority by weight, then the next priorities), leaving out those already
// tried for this request. With `lb_policy first` the proxy takes them in that order, and Caddy's
// passive health checks can still pass over one. Use it with the mediagw transport, which sets
// each upstream's credentials and path:
//
//	reverse_proxy {
//		dynamic mediagw
//		transport mediagw
//		lb_policy first
//		lb_retries 2
//	}
type ProxyUpstreams struct{}

// CaddyModule returns the Caddy module information.
func (ProxyUpstreams) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.upstreams.mediagw",
		New: func() caddy.Module { return new(ProxyUpstreams) },
	}
}

var errNoDispatch = errors.New("the request did not pass mediagw_route, so it has no mediagw upstreams")

// GetUpstreams returns the request's untried upstreams in the order to try them.
func (ProxyUpstreams) GetUpstreams(r *http.Request) ([]*reverseproxy.Upstream, error) {
	d, ok := providers.DispatchFrom(r.Context())
	if !ok {
		return nil, errNoDispatch
	}
	var buf [upstreamBlock]*providers.Upstream
	untried := d.AppendUntried(buf[:0])
	list := newUpstreamList(len(untried))
	for i, u := range untried {
		list[i].Dial = u.DialAddress()
		d.Yield(list[i], u)
	}
	return list, nil
}

// upstreamBlock is how many upstreams a request's list holds in one allocation.
const upstreamBlock = 4

// upstreamList holds a short list of upstreams and the pointers to them in one allocation.
// Each request gets its own: reverse_proxy provisions (writes) every upstream a source yields,
// so upstreams are never shared between requests.
type upstreamList struct {
	upstreams [upstreamBlock]reverseproxy.Upstream
	pointers  [upstreamBlock]*reverseproxy.Upstream
}

// soleUpstream is upstreamList for a provider with one upstream, the usual case: a quarter of
// the bytes, for every attempt of every request.
type soleUpstream struct {
	upstream reverseproxy.Upstream
	pointer  [1]*reverseproxy.Upstream
}

// newUpstreamList returns n pointers to zero upstreams.
func newUpstreamList(n int) []*reverseproxy.Upstream {
	if n == 1 {
		sole := new(soleUpstream)
		sole.pointer[0] = &sole.upstream
		return sole.pointer[:]
	}
	if n > upstreamBlock {
		list := make([]*reverseproxy.Upstream, n)
		for i := range list {
			list[i] = new(reverseproxy.Upstream)
		}
		return list
	}
	block := new(upstreamList)
	for i := range n {
		block.pointers[i] = &block.upstreams[i]
	}
	return block.pointers[:n:n]
}

// UnmarshalCaddyfile sets up the upstream source. Syntax:
//
//	dynamic mediagw
func (ProxyUpstreams) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "mediagw"
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Err("dynamic mediagw takes no options")
	}
	return nil
}

// publishUpstream sets the placeholders that name the upstream a request goes to.
func publishUpstream(repl *caddy.Replacer, u *providers.Upstream) {
	repl.Set("mediagw.upstream", u.Origin())
	repl.Set("mediagw.upstream_name", u.Name)
}

// Interface guards
var (
	_ reverseproxy.UpstreamSource = (*ProxyUpstreams)(nil)
	_ caddyfile.Unmarshaler       = (*ProxyUpstreams)(nil)
)
