// Package publicnet tells public internet addresses from loopback, private and special-purpose
// ones. Callbacks dial only public addresses, and media URLs must name public hosts.
package publicnet

import (
	"net/netip"
	"strings"
)

// nonPublic are the ranges that are not the public internet: loopback, private, link-local (cloud
// metadata at 169.254.169.254 among them), CGNAT, multicast, unspecified, broadcast,
// documentation, benchmarking, IPv4-compatible and IPv4-translated IPv6, NAT64/6to4 (which can
// carry private IPv4 addresses) and others.
var nonPublic = func() []netip.Prefix {
	var list []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/96", "::ffff:0:0:0/96", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
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

// IsLocalName reports whether a host name is one that never names a public host: localhost and
// names under the .localhost, .local, .internal and .home.arpa domains, or a name without a dot.
func IsLocalName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || !strings.Contains(host, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".home.arpa"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}
