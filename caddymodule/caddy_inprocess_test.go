package caddymodule

import (
	"strings"
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

// transportRoute is a site's route block that sends every request through mediagw_auth and
// mediagw_route to reverse_proxy with the mediagw upstreams and transport; extra lines (tab-indented
// three levels) go into the reverse_proxy block.
func transportRoute(extra ...string) string {
	var b strings.Builder
	b.WriteString("\troute {\n\t\tmediagw_auth\n\t\tmediagw_route\n\t\treverse_proxy {\n" +
		"\t\t\tdynamic mediagw\n\t\t\ttransport mediagw\n\t\t\tlb_policy first\n")
	for _, line := range extra {
		b.WriteString("\t\t\t" + line + "\n")
	}
	b.WriteString("\t\t}\n\t}\n")
	return b.String()
}
