package publicnet

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a URL host as a browser or a C library would read it: an IP address, whatever the form
// it was written in, or a lowercase ASCII domain name.
type Host struct {
	// Addr is set when the host is an IP address.
	Addr netip.Addr
	// Name is the canonical domain name when the host is not an IP address.
	Name string
}

// IsIP reports whether the host is an IP address.
func (h Host) IsIP() bool { return h.Addr.IsValid() }

// Errors of ParseHost.
var (
	ErrEmptyHost     = errors.New("the host is empty")
	ErrHostEncoding  = errors.New("the host is percent-encoded or carries an IPv6 zone")
	ErrInvalidIPv4   = errors.New("the host ends in a number but is not a valid IPv4 address")
	ErrInvalidIPv6   = errors.New("the host is not a valid IPv6 address")
	ErrInvalidDomain = errors.New("the host is not a valid domain name")
)

// ParseHost reads a URL host (without port, IPv6 in brackets) the way the WHATWG URL standard
// does, which is also how inet_aton reads IPv4: so that every spelling of an address is
// recognised as that address. In particular:
//
//   - IPv4 in any form inet_aton accepts: 127.1, 0x7f.1, 0177.0.0.1, 2130706433, 0x7f000001;
//     and with one trailing dot (127.0.0.1.). A host whose last label is a number but which is
//     not a valid IPv4 address (1.2.3.4.5, 256.0.0.1, 08.1) is an error, as in browsers.
//   - IPv6 in brackets, in any form netip reads (::127.0.0.1, ::ffff:7f00:1); a zone is an
//     error.
//   - Non-ASCII names are mapped as browsers map them (UTS #46: full-width digits and dots
//     become ASCII), and the result is read again, so １２７.０.０.１ is 127.0.0.1.
//   - Percent-encoding in a host is an error.
func ParseHost(host string) (Host, error) {
	if host == "" {
		return Host{}, ErrEmptyHost
	}
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return Host{}, ErrInvalidIPv6
		}
		inner := host[1 : len(host)-1]
		if strings.ContainsRune(inner, '%') {
			return Host{}, ErrHostEncoding
		}
		addr, err := netip.ParseAddr(inner)
		if err != nil || !addr.Is6() {
			return Host{}, ErrInvalidIPv6
		}
		return Host{Addr: addr}, nil
	}
	if strings.ContainsRune(host, '%') {
		return Host{}, ErrHostEncoding
	}
	if strings.ContainsAny(host, ":[]") {
		// An unbracketed IPv6 address, or a stray bracket or colon: not a host.
		if addr, err := netip.ParseAddr(host); err == nil && addr.Is6() && addr.Zone() == "" {
			return Host{Addr: addr}, nil
		}
		return Host{}, ErrInvalidDomain
	}
	ascii := host
	if !isASCII(host) {
		mapped, err := idna.Lookup.ToASCII(host)
		if err != nil || mapped == "" || !isASCII(mapped) {
			return Host{}, ErrInvalidDomain
		}
		ascii = mapped
	}
	ascii = strings.ToLower(ascii)
	if strings.ContainsAny(ascii, "%[]:/\\?#@ \t") {
		return Host{}, ErrInvalidDomain
	}
	if endsInNumber(ascii) {
		addr, ok := parseIPv4(ascii)
		if !ok {
			return Host{}, ErrInvalidIPv4
		}
		return Host{Addr: addr}, nil
	}
	name := strings.TrimSuffix(ascii, ".")
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return Host{}, ErrInvalidDomain // an empty label
	}
	return Host{Name: name}, nil
}

// endsInNumber reports whether the last label (after dropping one trailing dot) is a number in
// the WHATWG sense: decimal digits, or 0x followed by hex digits.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	if labels[len(labels)-1] == "" && len(labels) > 1 {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return false
}

// parseIPv4 is the WHATWG IPv4 parser (the same forms as inet_aton): up to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true // "0x" alone is zero
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if len(s) > 32 {
		return 0, false // far past any IPv4 value
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
