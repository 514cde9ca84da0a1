package auth

import (
	"net/netip"
	"testing"
)

// An allow_ips entry written in IPv4-mapped IPv6 form names the IPv4 addresses it carries, as a
// single mapped address already does: the client address is compared unmapped, so a mapped
// range kept as it was written would never match anything.
func TestIPv4MappedAllowListEntries(t *testing.T) {
	for _, tc := range []struct {
		entry string
		in    []string
		out   []string
	}{
		{"::ffff:10.0.0.0/104", []string{"10.1.2.3", "::ffff:10.1.2.3"}, []string{"11.0.0.1", "::ffff:11.0.0.1", "2001:db8::1"}},
		{"::ffff:192.0.2.7/128", []string{"192.0.2.7", "::ffff:192.0.2.7"}, []string{"192.0.2.8"}},
		{"::ffff:192.0.2.7", []string{"192.0.2.7", "::ffff:192.0.2.7"}, []string{"192.0.2.8"}},
		{"::ffff:0.0.0.0/96", []string{"192.0.2.7", "10.0.0.1"}, []string{"2001:db8::1"}},
		// Shorter than /96, a range spans more than the mapped block: it stays IPv6 and names
		// no IPv4 client.
		{"::ffff:0:0/95", nil, []string{"192.0.2.7", "::ffff:192.0.2.7"}},
		{"10.0.0.0/8", []string{"10.1.2.3", "::ffff:10.1.2.3"}, []string{"11.0.0.1"}},
	} {
		p, err := ParseIPRange(tc.entry)
		if err != nil {
			t.Fatalf("%s: %v", tc.entry, err)
		}
		for _, a := range tc.in {
			if !ipAllowed([]netip.Prefix{p}, netip.MustParseAddr(a)) {
				t.Errorf("%s (parsed %s) refuses %s", tc.entry, p, a)
			}
		}
		for _, a := range tc.out {
			if ipAllowed([]netip.Prefix{p}, netip.MustParseAddr(a)) {
				t.Errorf("%s (parsed %s) allows %s", tc.entry, p, a)
			}
		}
	}
	// A mapped range stored before ParseIPRange unmapped it is still read so.
	stored := []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}
	if !ipAllowed(stored, netip.MustParseAddr("10.1.2.3")) || ipAllowed(stored, netip.MustParseAddr("11.0.0.1")) {
		t.Error("a stored mapped range is not judged by the IPv4 range it carries")
	}
}
