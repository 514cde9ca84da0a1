package upstream

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/publicnet"
)

// A result address comes from the provider's answer, so the provider (or whoever can shape its
// answer) chooses where the gateway connects. Open fetches an address on the upstream's own host
// (any port: the operator chose that host) through the upstream's client; any other address, and
// every redirect off that host, through offHostTransport, which connects only to public
// addresses. The check runs on the address being connected to, after name resolution, so a name
// that resolves (or re-resolves) to a loopback, private, link-local or metadata address is
// refused: a result cannot make the gateway read its own admin endpoint, a cloud metadata
// service or a host of the operator's network and stream the answer to a client.

// offHostTransport fetches result addresses off the upstream's host. It takes no proxy from the
// environment: a proxy would connect for it, past the address check.
var offHostTransport = &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, Control: publicOnly}).DialContext,
	ForceAttemptHTTP2:     true,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
	MaxIdleConns:          16,
	IdleConnTimeout:       90 * time.Second,
}

// errNotPublic is a connection refused because its address is not public.
type errNotPublic struct{ addr string }

func (e errNotPublic) Error() string {
	return fmt.Sprintf("result address %s is not public", e.addr)
}

// publicOnly is a net.Dialer Control that refuses addresses that are not public.
func publicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !publicnet.IsPublic(ap.Addr()) {
		return errNotPublic{addr: address}
	}
	return nil
}

// onUpstreamHost reports whether target is on the host of u's base URL, whatever its port.
func onUpstreamHost(target *url.URL, u *providers.Upstream) bool {
	return u.BaseURL != nil && strings.EqualFold(strings.TrimSuffix(target.Hostname(), "."), strings.TrimSuffix(u.BaseURL.Hostname(), "."))
}
