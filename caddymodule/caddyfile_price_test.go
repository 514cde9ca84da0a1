package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestPriceCacheWrites: a price block names the prices of prompt cache writes per million
// tokens, each once; they are amounts of 0 or more, as input_tokens is.
func TestPriceCacheWrites(t *testing.T) {
	d := caddyfile.NewTestDispenser("price claude {\n input_tokens 3\n cache_write_5m_tokens 3.75\n cache_write_1h_tokens 6\n}")
	d.Next()
	p, err := parsePrice(d)
	if err != nil || p.CacheWrite5mTokens.String() != "3.75" || p.CacheWrite1hTokens.String() != "6" {
		t.Fatalf("parsePrice = %+v, %v; want cache writes 3.75 and 6", p, err)
	}
	for _, bad := range []string{
		"price claude {\n cache_write_1h_tokens -1\n}",
		"price claude {\n cache_write_1h_tokens 6\n cache_write_1h_tokens 7\n}",
		"price claude {\n cache_write_5m_tokens 1 2\n}",
	} {
		d := caddyfile.NewTestDispenser(bad)
		d.Next()
		if _, err := parsePrice(d); err == nil {
			t.Errorf("parsePrice accepted %q", bad)
		}
	}
}
