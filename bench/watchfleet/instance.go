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
}

func (f *instanceFlags) register() {
	flag.StringVar(&f.owner, "instance", "", "(internal) run as the gateway instance of this name")
	flag.StringVar(&f.redisURL, "redis", "", "(internal) the instance's Redis URL")
	flag.StringVar(&f.upstreamURL, "upstream", "", "(internal) the instance's upstream base URL")
	flag.StringVar(&f.cpuProfile, "instance-cpuprofile", "", "(internal) the instance's CPU profile")
}

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
	base, err := url.Parse(f.upstreamURL)
	if err != nil {
		log.Fatal(err)
	}
	catalog, err := providers.NewCatalog([]*providers.Provider{{Name: "sim", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
	if err != nil {
		log.Fatal(err)
	}
	h := &videotask.Handler{Catalog: catalog, Store: store, Client: &http.Client{Timeout: 30 * time.Second}, Logger: zap.NewNop()}
	w := &videotask.Watcher{Tasks: h, Interval: interval, Concurrency: concurrency, RatePerSecond: rps, Owner: f.owner}
	w.Run(ctx.Done())
}
