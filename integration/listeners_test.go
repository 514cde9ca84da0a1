package integration

import (
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
)

// listeners returns the local addresses of the TCP sockets listening on port, from the kernel's
// socket tables (/proc/net/tcp and tcp6), without sending anything anywhere.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if os.IsNotExist(err) && table == "/proc/net/tcp6" {
			continue // a kernel without IPv6
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A is LISTEN
				continue
			}
			hexIP, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			addrs = append(addrs, procAddr(t, hexIP))
		}
	}
	return addrs
}

// procAddr decodes an address of /proc/net/tcp*: 32-bit words in host (little-endian) order.
func procAddr(t *testing.T, h string) string {
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		t.Fatalf("bad address %q in the socket table", h)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return a.Unmap().String()
}
