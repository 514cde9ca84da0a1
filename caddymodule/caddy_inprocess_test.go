package caddymodule

import (
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// startCaddy runs a Caddyfile in this process and returns its HTTP server, to be served with
// ServeHTTP, and a stop that ends Caddy (once; it also runs at the end of the test). The
// Caddyfile should have one site.
func startCaddy(tb testing.TB, caddyfile string) (*caddyhttp.Server, func()) {
	tb.Helper()
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		tb.Fatalf("adapting: %v %v", err, warnings)
	}
	if err := caddy.Load(cfg, true); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := caddy.Stop(); err != nil {
				tb.Error(err)
			}
		})
	}
	tb.Cleanup(stop)
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		tb.Fatal(err)
	}
	var srv *caddyhttp.Server
	for _, s := range app.(*caddyhttp.App).Servers {
		srv = s
	}
	return srv, stop
}
