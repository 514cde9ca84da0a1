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
// answer) chooses where the gateway connects. Open fetches an address on the upstream's own
// origin (the scheme, host and port of its base URL, as the operator configured it) through the
// upstream's client; any other address, and every redirect off that origin, through
// offHostTransport, which connects only to public addresses. Another port of the upstream's host
// is another origin: a provider on the gateway's own host (a sidecar on 127.0.0.1) must not make
// the gateway read the admin endpoint or another service there. The check runs on the address
// being connected to, after name resolution, so a name that resolves (or re-resolves) to a
// loopback, private, link-local or metadata address (localhost, [::1], 127.0.0.2) is refused: a
// result cannot make the gateway read its own admin endpoint, a cloud metadata service or a host
// of the operator's network and stream the answer to a client.

// offHostTransport fetches result addresses off the upstream's origin. It takes no proxy from the
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

// onUpstreamOrigin reports whether target is on the origin of u's base URL: the same scheme,
// host and port (a default port written or not, the host in any case, with or without its
// trailing dot).
func onUpstreamOrigin(target *url.URL, u *providers.Upstream) bool {
	return u.BaseURL != nil && originOf(target) == originOf(u.BaseURL)
}

// originOf is a URL's scheme, host and port in one normal form.
func originOf(v *url.URL) string {
	scheme := strings.ToLower(v.Scheme)
	port := v.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.TrimSuffix(strings.ToLower(v.Hostname()), "."), port)
}
