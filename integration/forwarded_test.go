package integration

import (
	"net/http"
	"strings"
	"testing"
)

// forwardedCaddyfile trusts the loopback address as a proxy, as a gateway behind a load
// balancer does, without trusted_proxies_strict (Caddy's default): Caddy's client IP is then the
// leftmost X-Forwarded-For address, which the client itself writes.
const forwardedCaddyfile = `{
	{{globals}}
	servers {
		trusted_proxies static 127.0.0.1/32
	}
	mediagw {
		storage badger {{data}}
		key mg-office {
			account acme
			allow_ips 203.0.113.0/24
		}
		key mg-anywhere {
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		respond "id={http.auth.user.id}"
	}
}
`

// TestAllowIPsBehindAProxyIsNotSpoofed: a load balancer appends the address it saw to the
// client's own X-Forwarded-For. A client outside a key's allow_ips that writes an allowed
// address in front must not pass: without trusted_proxies_strict, every address the proxies
// report must be allowed.
func TestAllowIPsBehindAProxyIsNotSpoofed(t *testing.T) {
	base, _ := startSimGateway(t, forwardedCaddyfile, nil)
	get := func(key, xff string) response {
		req, _ := http.NewRequest(http.MethodGet, base+"/anything", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		return do(t, req)
	}
	for _, tc := range []struct {
		name, key, xff string
		status         int
	}{
		{"allowed client through the proxy", "mg-office", "203.0.113.7", 200},
		{"allowed client, port kept by the proxy", "mg-office", "203.0.113.7:5123", 200},
		{"outside client writing an allowed address in front", "mg-office", "203.0.113.7, 198.51.100.9", 403},
		{"outside client hiding behind a junk entry", "mg-office", "203.0.113.7, junk, 198.51.100.9", 403},
		{"outside client", "mg-office", "198.51.100.9", 403},
		{"the proxy itself, no header", "mg-office", "", 403},
		{"a key without allow_ips is unaffected", "mg-anywhere", "203.0.113.7, 198.51.100.9", 200},
	} {
		r := get(tc.key, tc.xff)
		if r.status != tc.status {
			t.Errorf("%s: got %d %s, want %d", tc.name, r.status, r.body, tc.status)
		}
		if tc.status == 403 && !strings.Contains(string(r.body), "ip_not_allowed") {
			t.Errorf("%s: refusal %s", tc.name, r.body)
		}
	}
}
