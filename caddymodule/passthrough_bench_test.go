package caddymodule

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	_ "github.com/mediagw/mediagw/internal/standardset"
	"github.com/mediagw/mediagw/storage"
)

// benchAnswer is a chat completion with token usage, as an upstream would answer.
const benchAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// BenchmarkPassThroughOverhead measures what mediagw adds to a pass-through request, in
// process: Caddy's server runs mediagw_auth and mediagw_route (with metrics and usage records
// on, the records JSON-encoded into a discarding log) in front of a static answer ("mediagw"),
// beside the same server with only the static answer ("baseline"); and the same two in front of
// reverse_proxy to an upstream in this process ("mediagw_proxied", "baseline_proxied"); the
// proxied request of a priced model by a credited account, which holds its estimate and settles
// it in the Badger ledger ("priced_proxied", bench/run.sh's priced gateway); and over
// two upstreams ("baseline_two": reverse_proxy with both; "mediagw_two": a provider with both as
// its upstreams, reverse_proxy with the mediagw upstream source and transport); and the
// three from 32 goroutines at once, the gateway with the mediagw upstream source and transport
// as bench/run.sh's ("*_parallel", as its 32 connections, whose priced requests share the
// ledger's commits); and the priced request in front of the static answer beside the static
// answer alone, from 32 goroutines ("priced_static_parallel", "baseline_static_parallel": what
// mediagw itself does for a priced request, with no upstream connection's noise). The
// differences are mediagw's CPU time (cpu-ns/op, every thread of the process) and allocations
// per request. Run it with
//
//	go test ./caddymodule/ -run '^$' -bench PassThroughOverhead -benchmem -count 5
func BenchmarkPassThroughOverhead(b *testing.B) {
	dir := b.TempDir()
	b.Setenv("XDG_CONFIG_HOME", dir)
	b.Setenv("XDG_DATA_HOME", dir)
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, benchAnswer); err != nil {
			return
		}
	})
	upstream, second := httptest.NewServer(answer), httptest.NewServer(answer)
	b.Cleanup(upstream.Close)
	b.Cleanup(second.Close)
	up := strings.TrimPrefix(upstream.URL, "http://")
	up2 := strings.TrimPrefix(second.URL, "http://")
	port := strconv.Itoa(freeBenchPort(b))
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
		storage badger %[1]s
		provider chat {
			base_url http://%[2]s/v1
			api_key upstream-key
			models bench-chat bench-priced
		}
		provider two {
			models bench-two
			upstream a {
				base_url http://%[2]s/v1
				api_key upstream-key-a
			}
			upstream b {
				base_url http://%[5]s/v1
				api_key upstream-key-b
			}
		}
		key mg-bench-key {
			account bench
		}
		key mg-priced-key {
			account priced
		}
		currency USD
		price bench-priced {
			input_tokens 0.15
			output_tokens 0.60
		}
	}
}
http://static.test:%[3]s {
	route /baseline/* {
		%[4]s
	}
	route {
		mediagw_auth
		mediagw_route
		%[4]s
	}
}
http://proxied.test:%[3]s {
	route /baseline/* {
		reverse_proxy %[2]s
	}
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy %[2]s
	}
}
http://transport.test:%[3]s {
	route /baseline/* {
		reverse_proxy %[2]s
	}
`+transportRoute()+`}
http://two.test:%[3]s {
	route /baseline/* {
		reverse_proxy %[2]s %[5]s
	}
`+transportRoute("lb_retries 1")+`}
`, filepath.Join(dir, "store"), up, port, respond, up2)
	srv, _ := startCaddy(b, config)
	creditBench(b, "priced")
	chat := []byte(`{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`)
	two := []byte(`{"model":"bench-two","messages":[{"role":"user","content":"hello"}]}`)
	priced := []byte(`{"model":"bench-priced","messages":[{"role":"user","content":"hello"}]}`)
	request := func(b *testing.B, host, path string) {
		body, key := chat, "mg-bench-key"
		switch host {
		case "two.test":
			body = two
		case "priced.test":
			body, key, host = priced, "mg-priced-key", "proxied.test"
		case "priced.transport.test":
			body, key, host = priced, "mg-priced-key", "transport.test"
		case "priced.static.test":
			body, key, host = priced, "mg-priced-key", "static.test"
		}
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Host = host
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "chatcmpl-1") {
			b.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	serve := func(b *testing.B, host, path string) {
		b.ReportAllocs()
		cpu := processCPU(b)
		n := 0
		for b.Loop() {
			n++
			request(b, host, path)
			if b.Failed() {
				b.FailNow()
			}
		}
		// The process's CPU time per request (every thread, the garbage collector's too) is
		// disturbed far less by other load on the machine than ns/op.
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(n), "cpu-ns/op")
	}
	// serveParallel is serve from 32 goroutines at once, as bench/run.sh's 32 connections: the
	// ledger's group commit then carries several requests per batch.
	serveParallel := func(b *testing.B, host, path string) {
		b.ReportAllocs()
		b.SetParallelism(32 / max(runtime.GOMAXPROCS(0), 1))
		cpu, faults := processCPU(b), minorFaults(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() && !b.Failed() {
				request(b, host, path)
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(minorFaults(b)-faults)/float64(b.N), "faults/op")
	}
	b.Run("baseline", func(b *testing.B) { serve(b, "static.test", "/baseline/v1/chat/completions") })
	b.Run("mediagw", func(b *testing.B) { serve(b, "static.test", "/v1/chat/completions") })
	b.Run("baseline_proxied", func(b *testing.B) { serve(b, "proxied.test", "/baseline/v1/chat/completions") })
	b.Run("mediagw_proxied", func(b *testing.B) { serve(b, "proxied.test", "/v1/chat/completions") })
	b.Run("priced_proxied", func(b *testing.B) { serve(b, "priced.test", "/v1/chat/completions") })
	b.Run("baseline_two", func(b *testing.B) { serve(b, "two.test", "/baseline/v1/chat/completions") })
	b.Run("mediagw_two", func(b *testing.B) { serve(b, "two.test", "/v1/chat/completions") })
	b.Run("baseline_parallel", func(b *testing.B) { serveParallel(b, "transport.test", "/baseline/v1/chat/completions") })
	b.Run("mediagw_parallel", func(b *testing.B) { serveParallel(b, "transport.test", "/v1/chat/completions") })
	b.Run("priced_parallel", func(b *testing.B) { serveParallel(b, "priced.transport.test", "/v1/chat/completions") })
	// mediagw's own work on a priced request, without an upstream's: the static answer behind
	// mediagw_auth and mediagw_route beside the static answer alone, from 32 goroutines.
	b.Run("baseline_static_parallel", func(b *testing.B) { serveParallel(b, "static.test", "/baseline/v1/chat/completions") })
	b.Run("priced_static_parallel", func(b *testing.B) { serveParallel(b, "priced.static.test", "/v1/chat/completions") })
}

// creditBench credits account with 1,000,000 in the running gateway's store, so that every
// request of its key holds its estimate against the balance and settles it, as bench/run.sh's
// priced gateway does.
func creditBench(b *testing.B, account string) {
	app, err := caddy.ActiveContext().App("mediagw")
	if err != nil {
		b.Fatal(err)
	}
	credit := storage.Credit{Account: account, Amount: 1_000_000 * 1_000_000, IdempotencyKey: "bench"}
	if _, err := app.(*App).Store().Credit(context.Background(), credit, time.Now()); err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time (user and system) this process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// minorFaults is the number of page faults this process has taken so far that needed no disk
// read (first touches of fresh memory and of pages of mapped files among them).
func minorFaults(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Minflt
}

// freeBenchPort returns a loopback port that was free a moment ago.
func freeBenchPort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
