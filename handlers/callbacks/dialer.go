package callbacks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// nonPublic are the ranges a callback may never reach unless private callbacks are allowed:
// loopback, private, link-local (cloud metadata at 169.254.169.254 among them), CGNAT,
// multicast, unspecified, broadcast, and other special-purpose ranges.
var nonPublic = func() []netip.Prefix {
	var list []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		list = append(list, netip.MustParsePrefix(s))
	}
	return list
}()

// IsPublic reports whether addr is a public unicast address. IPv4-mapped IPv6 addresses are
// judged by the IPv4 address they carry.
func IsPublic(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() || !addr.IsGlobalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// ErrNotPublic is returned when a callback URL resolves to an address that is not public.
type ErrNotPublic struct{ Addr string }

func (e ErrNotPublic) Error() string {
	return fmt.Sprintf("callback address %s is not public", e.Addr)
}

// Dialer dials TCP for callbacks. Unless AllowPrivate is set, it refuses any address that is not
// public. The check runs on the address actually being connected to, after name resolution, so a
// name that resolves (or re-resolves) to a private address is refused too.
func Dialer(allowPrivate bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !IsPublic(ap.Addr()) {
				return ErrNotPublic{Addr: address}
			}
			return nil
		}
	}
	return d.DialContext
}
