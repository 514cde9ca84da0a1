package publicnet

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseHostReadsEveryIPv4Spelling(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1":          "127.0.0.1",
		"127.1":              "127.0.0.1",
		"127.0.1":            "127.0.0.1",
		"0x7f.1":             "127.0.0.1",
		"0X7F.0.0.1":         "127.0.0.1",
		"0177.0.0.1":         "127.0.0.1",
		"0177.0.0.01":        "127.0.0.1",
		"2130706433":         "127.0.0.1",
		"0x7f000001":         "127.0.0.1",
		"017700000001":       "127.0.0.1",
		"127.0.0.1.":         "127.0.0.1",
		"0":                  "0.0.0.0",
		"0x":                 "0.0.0.0",
		"10.0xff.0377.1":     "10.255.255.1",
		"169.254.43518":      "169.254.169.254",
		"0xa9fea9fe":         "169.254.169.254",
		"１２７.０.０.１":          "127.0.0.1",
		"127。0。0。1":          "127.0.0.1",
		"[::1]":              "::1",
		"[::127.0.0.1]":      "::7f00:1",
		"[::ffff:7f00:1]":    "::ffff:127.0.0.1",
		"[0:0:0:0:0:0:0:1]":  "::1",
		"[::ffff:127.0.0.1]": "::ffff:127.0.0.1",
	} {
		h, err := ParseHost(host)
		if err != nil || !h.IsIP() || h.Addr != netip.MustParseAddr(want) {
			t.Errorf("ParseHost(%q) = %+v, %v; want %s", host, h, err, want)
		}
	}
}

func TestParseHostNamesAndRefusals(t *testing.T) {
	for host, want := range map[string]string{
		"Example.COM":        "example.com",
		"example.com.":       "example.com",
		"cdn.example.com":    "cdn.example.com",
		"127.0.0.1.nip.io":   "127.0.0.1.nip.io",
		"0x7f.example":       "0x7f.example",
		"bücher.example":     "xn--bcher-kva.example",
		"1.2.3.4a":           "1.2.3.4a",
		"LOCALHOST":          "localhost",
		"printer.local":      "printer.local",
		"metadata.internal.": "metadata.internal",
	} {
		h, err := ParseHost(host)
		if err != nil || h.IsIP() || h.Name != want {
			t.Errorf("ParseHost(%q) = %+v, %v; want name %s", host, h, err, want)
		}
	}
	for _, host := range []string{
		"", "1.2.3.4.5", "256.0.0.1", "1.2.3.256.", "08.0.0.1", "0x100000000", "4294967296", "1..1", ".1",
		"127.0.0.1..", "%31%32%37.0.0.1", "127.0.0.1%2f", "[fe80::1%25eth0]", "[::1%lo]", "[127.0.0.1]",
		"[::1", "::1]", "a:b", "exa mple.com", "ex\\ample.com", "a..b", ".",
	} {
		if h, err := ParseHost(host); err == nil {
			t.Errorf("ParseHost(%q) = %+v, want an error", host, h)
		}
	}
}

func TestIPv4CompatibleAndTranslatedAreNotPublic(t *testing.T) {
	for _, a := range []string{"::7f00:1", "::a00:1", "::808:808", "::ffff:0:7f00:1", "3fff::1", "5f00::1"} {
		if IsPublic(netip.MustParseAddr(a)) {
			t.Errorf("IsPublic(%s) = true", a)
		}
	}
}

// FuzzParseHost checks that whatever ParseHost returns agrees with itself: an IP result is what
// the canonical spelling of that IP parses to, and a name never ends in a number.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.1", "0x7f.1", "0177.0.0.1", "2130706433", "127.0.0.1.", "[::127.0.0.1]",
		"[::ffff:7f00:1]", "１２７.０.０.１", "example.com", "[fe80::1%25eth0]", "%31.1", "1.2.3.4.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		h, err := ParseHost(host)
		if err != nil {
			return
		}
		if h.IsIP() {
			canonical := h.Addr.String()
			if h.Addr.Is6() {
				canonical = "[" + canonical + "]"
			}
			again, err := ParseHost(canonical)
			if err != nil || again.Addr != h.Addr {
				t.Fatalf("%q -> %s, but its canonical form parses to %+v, %v", host, h.Addr, again, err)
			}
			return
		}
		if h.Name == "" || endsInNumber(h.Name) || strings.ContainsAny(h.Name, "%[]: /\\") {
			t.Fatalf("%q -> name %q", host, h.Name)
		}
		if _, ok := parseIPv4(h.Name); ok {
			t.Fatalf("%q -> name %q that reads as an IPv4 address", host, h.Name)
		}
	})
}
