package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask"
	"github.com/mediagw/mediagw/storage"
)

// instanceFlags are the hidden flags by which the bench starts itself as one gateway instance.
type instanceFlags struct {
	owner, redisURL, upstreamURL, cpuProfile string
	// upstreamRPS is each upstream's max_rps (0: unbounded).
	upstreamRPS float64
}

func (f *instanceFlags) register() {
	flag.StringVar(&f.owner, "instance", "", "(internal) run as the gateway instance of this name")
	flag.StringVar(&f.redisURL, "redis", "", "(internal) the instance's Redis URL")
	flag.StringVar(&f.upstreamURL, "upstream", "", "(internal) the instance's upstream base URL")
	flag.StringVar(&f.cpuProfile, "instance-cpuprofile", "", "(internal) the instance's CPU profile")
	flag.Float64Var(&f.upstreamRPS, "instance-upstream-rps", 0, "(internal) each upstream's max_rps")
}

// fleetProviders are the providers of the fleet's tasks, one per protocol, all played by the
// bench's simulator under the instance's path prefix (upstreamURL is …/i<n>): Ark ("sim", model
// m), DashScope ("wan") and Kling ("kling"), each upstream with max_rps upstreamRPS.
func fleetProviders(upstreamURL string, upstreamRPS float64) ([]*providers.Provider, error) {
	var out []*providers.Provider
	for _, p := range []struct{ name, protocol, path, model string }{
		{"sim", "", "/api/v3", "m"}, {"wan", "dashscope", "/api/v1", "wan"}, {"kling", "kling", "/v1", "kling"},
	} {
		base, err := url.Parse(upstreamURL + p.path)
		if err != nil {
			return nil, err
		}
		u := &providers.Upstream{Name: providers.DefaultUpstreamName, BaseURL: base, APIKey: "k", MaxRPS: upstreamRPS}
		prov := &providers.Provider{Name: p.name, Protocol: p.protocol, Models: []string{p.model}, Upstreams: []*providers.Upstream{u}}
		if p.protocol == "kling" {
			u.APIKey, u.AccessKey, u.SecretKey = "", klingAccessKey, klingSecretKey
			prov.AuthStyle = providers.AuthKlingJWT
		}
		out = append(out, prov)
	}
	return out, nil
}

// The fleet's Kling credential, which the simulator checks.
const (
	klingAccessKey = "fleet-access-key"
	klingSecretKey = "fleet-secret-key"
)

// runInstance is one gateway instance's watcher with its own Redis client, as in a gateway
// process, until SIGTERM (then it stops as Caddy would: its watcher hands its shards over).
func runInstance(f instanceFlags, interval time.Duration, rps float64, concurrency int) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if f.cpuProfile != "" {
		out, err := os.Create(f.cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	store, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: f.redisURL, KeyPrefix: "fleet"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	provs, err := fleetProviders(f.upstreamURL, f.upstreamRPS)
	if err != nil {
		log.Fatal(err)
	}
	catalog, err := providers.NewCatalog(provs)
	if err != nil {
		log.Fatal(err)
	}
	h := &videotask.Handler{Catalog: catalog, Store: store, Client: &http.Client{Timeout: 30 * time.Second}, Logger: zap.NewNop()}
	w := &videotask.Watcher{Tasks: h, Interval: interval, Concurrency: concurrency, RatePerSecond: rps, Owner: f.owner}
	w.Run(ctx.Done())
}
