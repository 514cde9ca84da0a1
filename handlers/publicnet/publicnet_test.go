package publicnet

import (
	"net/netip"
	"testing"
)

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true,
		"127.0.0.1": false, "127.8.9.10": false, "::1": false, "10.1.2.3": false, "172.16.5.4": false,
		"172.31.255.255": false, "192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false,
		"100.127.255.255": false, "224.0.0.1": false, "0.0.0.0": false, "::": false, "255.255.255.255": false,
		"fd00::1": false, "fe80::1": false, "ff02::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:169.254.169.254": false, "::ffff:8.8.8.8": true,
		"64:ff9b::a00:1": false, "2002:7f00:1::": false,
	} {
		if got := IsPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestIsLocalName(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "a.localhost": true, "nas.local": true, "db.svc.internal": true,
		"router.home.arpa": true, "intranet": true, "cdn.example.com": false, "localhost.example.com": false,
	} {
		if got := IsLocalName(host); got != want {
			t.Errorf("IsLocalName(%q) = %v, want %v", host, got, want)
		}
	}
}
