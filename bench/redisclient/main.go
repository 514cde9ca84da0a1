// Command redisclient compares the two Redis clients that the Redis store could use,
// github.com/redis/rueidis and github.com/redis/go-redis/v9, on the operations the gateway does
// against a local redis-server (started by internal/testredis, AOF with fsync always):
//
//   - key lookup: the per-request read of an API key record (rueidis with client-side caching, the
//     same without, go-redis GET);
//   - counter with limit: EVALSHA of the quota-charge script;
//   - task write: MULTI/EXEC of a task record and its list index (SET + ZADD), as a create does.
//
// Every loop is bounded by a count and a time limit; traffic goes to 127.0.0.1 only.
//
//	go run ./bench/redisclient -n 20000 -c 32
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/mediagw/mediagw/bench/mainenv"
	"github.com/mediagw/mediagw/internal/testredis"
)

const chargeScript = `
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(ARGV[1])
local lim = tonumber(ARGV[2])
if lim >= 0 and v + d > lim then return {v, 0} end
return {redis.call('INCRBY', KEYS[1], d), 1}`

var (
	n    = flag.Int("n", 20000, "operations per run")
	conc = flag.Int("c", 32, "concurrent callers")
	max  = flag.Duration("max", 30*time.Second, "time limit per run")
)

func main() {
	flag.Parse()
	env := mainenv.New("bench-redis-")
	defer env.Close()
	srv := testredis.Start(env, testredis.Options{})
	ctx := context.Background()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	gc := goredis.NewClient(&goredis.Options{Addr: srv.Addr, PoolSize: *conc})
	defer gc.Close()

	record := `{"id":"k_0123456789","hash":"` + strings.Repeat("ab", 32) + `","account":"acme","models":["doubao-*"],"rate_requests":600,"rate_window":60000000000}`
	if err := gc.Set(ctx, "bench:key", record, 0).Err(); err != nil {
		log.Fatal(err)
	}
	sha, err := gc.ScriptLoad(ctx, chargeScript).Result()
	if err != nil {
		log.Fatal(err)
	}

	fmt.Printf("redis-server %s, %d ops per run, %d callers\n\n", srv.Addr, *n, *conc)
	fmt.Printf("| Operation | Client | ops/s | p50 | p99 |\n| --- | --- | ---: | ---: | ---: |\n")
	runs := []struct {
		op, client string
		fn         func(i int) error
	}{
		{"key lookup", "rueidis DoCache (client-side cache)", func(int) error {
			return rc.DoCache(ctx, rc.B().Get().Key("bench:key").Cache(), time.Minute).Error()
		}},
		{"key lookup", "rueidis Do (no cache)", func(int) error {
			return rc.Do(ctx, rc.B().Get().Key("bench:key").Build()).Error()
		}},
		{"key lookup", "go-redis GET", func(int) error {
			return gc.Get(ctx, "bench:key").Err()
		}},
		{"counter with limit", "rueidis EVALSHA", func(i int) error {
			return rc.Do(ctx, rc.B().Evalsha().Sha1(sha).Numkeys(1).Key(fmt.Sprintf("bench:q:%d", i%64)).Arg("1", "-1").Build()).Error()
		}},
		{"counter with limit", "go-redis EVALSHA", func(i int) error {
			return gc.EvalSha(ctx, sha, []string{fmt.Sprintf("bench:q:%d", i%64)}, 1, -1).Err()
		}},
		{"task write (MULTI SET+ZADD)", "rueidis DoMulti", func(i int) error {
			id := fmt.Sprintf("cgt-%d", i)
			for _, r := range rc.DoMulti(ctx,
				rc.B().Multi().Build(),
				rc.B().Set().Key("bench:task:"+id).Value(record).Build(),
				rc.B().Zadd().Key("bench:tasks:acme").ScoreMember().ScoreMember(float64(i), id).Build(),
				rc.B().Exec().Build()) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		}},
		{"task write (MULTI SET+ZADD)", "go-redis TxPipelined", func(i int) error {
			id := fmt.Sprintf("cgt-%d", i)
			_, err := gc.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, "bench:task:"+id, record, 0)
				p.ZAdd(ctx, "bench:tasks:acme", goredis.Z{Score: float64(i), Member: id})
				return nil
			})
			return err
		}},
	}
	for _, r := range runs {
		ops, p50, p99, err := measure(r.fn)
		if err != nil {
			log.Fatalf("%s %s: %v", r.op, r.client, err)
		}
		fmt.Printf("| %s | %s | %.0f | %v | %v |\n", r.op, r.client, ops, p50.Round(time.Microsecond), p99.Round(time.Microsecond))
	}
}

// measure runs fn n times from conc goroutines and returns the throughput and latency quantiles.
func measure(fn func(i int) error) (opsPerSec float64, p50, p99 time.Duration, err error) {
	// Warm up (connections, script cache, client-side cache).
	for i := range 200 {
		if err := fn(i); err != nil {
			return 0, 0, 0, err
		}
	}
	var next atomic.Int64
	var firstErr atomic.Value
	lat := make([]time.Duration, *n)
	deadline := time.Now().Add(*max)
	start := time.Now()
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= *n || time.Now().After(deadline) {
					return
				}
				t0 := time.Now()
				if err := fn(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e, ok := firstErr.Load().(error); ok {
		return 0, 0, 0, e
	}
	done := min(int(next.Load()), *n)
	lat = lat[:done]
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return float64(done) / elapsed.Seconds(), lat[done/2], lat[done*99/100], nil
}
