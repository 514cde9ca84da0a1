package caddymodule

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	_ "github.com/mediagw/mediagw/internal/standardset"
)

// benchAnswer is a chat completion with token usage, as an upstream would answer.
const benchAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// BenchmarkPassThroughOverhead measures what mediagw adds to a pass-through request, in
// process and without a network: Caddy's server runs mediagw_auth and mediagw_route (with
// metrics and usage records on, the records JSON-encoded into a discarding log) in front of a
// static answer, beside the same server with only the static answer. The difference of the two
// is mediagw's CPU time and allocations per request; reverse_proxy's own cost is the same on
// both sides and left out. Run it with
//
//	go test ./caddymodule/ -run '^$' -bench PassThroughOverhead -benchmem -count 5
func BenchmarkPassThroughOverhead(b *testing.B) {
	dir := b.TempDir()
	b.Setenv("XDG_CONFIG_HOME", dir)
	b.Setenv("XDG_DATA_HOME", dir)
	respond := "header Content-Type application/json\n\t\trespond `" + benchAnswer + "` 200"
	config := fmt.Sprintf(`{
	admin off
	persist_config off
	log default {
		output discard
		exclude mediagw.usage
	}
	log usage {
		output discard
		format json
		include mediagw.usage
	}
	mediagw {
		storage badger %s
		provider chat {
			base_url http://127.0.0.1:9/v1
			api_key upstream-key
			models bench-chat
		}
		key mg-bench-key {
			account bench
		}
	}
}
http://127.0.0.1:0 {
	route /baseline/* {
		%s
	}
	route {
		mediagw_auth
		mediagw_route
		%s
	}
}
`, filepath.Join(dir, "store"), respond, respond)
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(config), nil)
	if err != nil {
		b.Fatalf("adapting: %v %v", err, warnings)
	}
	if err := caddy.Load(cfg, true); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			b.Error(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Log(err)
		}
	})
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		b.Fatal(err)
	}
	var srv *caddyhttp.Server
	for _, s := range app.(*caddyhttp.App).Servers {
		srv = s
	}
	body := []byte(`{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`)
	serve := func(b *testing.B, path string) {
		b.ReportAllocs()
		for b.Loop() {
			r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			r.Host = "127.0.0.1"
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer mg-bench-key")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "chatcmpl-1") {
				b.Fatalf("%s: %d %s", path, w.Code, w.Body)
			}
		}
	}
	b.Run("baseline", func(b *testing.B) { serve(b, "/baseline/v1/chat/completions") })
	b.Run("mediagw", func(b *testing.B) { serve(b, "/v1/chat/completions") })
}
