package integration

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestFinishWhoseReplyIsLostEndsItsHold: the connection to redis-server is lost after the
// server stored the compare-and-set that finished a task (succeeded) and before the watcher
// read its reply. No process dies and the server stays up; the record says finished, so no
// later read finishes it again. The task's hold must still be settled, and its slot come back.
func TestFinishWhoseReplyIsLostEndsItsHold(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = time.Hour, 0, "sim-key"
	sim.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	upstream := httptest.NewServer(sim)
	defer upstream.Close()
	redis := testredis.Start(t, testredis.Options{})
	cutter := startLostReplyProxy(t, redis.URL())

	prefix := "mg-" + strings.ToLower(t.Name())
	adminPort, port := freePort(t), freePort(t)
	base, admin := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", adminPort)
	startCaddyProcess(t, fmt.Sprintf(finishEffectsCaddyfile, adminPort, "redis://"+cutter.addr, prefix, upstream.URL, port, ""), base+"/")
	r := call(t, "POST", "http://"+admin+"/mediagw/keys", "", `{"account":"cut","max_active_tasks":1}`)
	keyID, secret := r.field("id"), r.field("key")
	if r.status != 201 || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	id := createFinishTask(t, base, secret)
	// A client's read stores the upstream's answer: the record's change script is loaded into
	// the server before the cut (a first call is answered NOSCRIPT and sent again whole).
	if r := call(t, "GET", base+taskPath+"/"+id, secret, nil); r.status != 200 || r.field("status") != "queued" {
		t.Fatalf("query = %d %s", r.status, r.body)
	}
	cutter.arm(`"status":"succeeded"`) // the write that finishes the task is the first to say it
	shift.Store(int64(2 * time.Hour))

	ctx := context.Background()
	store, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: redis.URL(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitFor(t, "the record finished", func() bool {
		rec, err := store.Task(ctx, id)
		return err == nil && rec.Finished
	})
	if cutter.cuts.Load() != 1 {
		t.Fatalf("the proxy cut %d connections; want 1", cutter.cuts.Load())
	}
	for limit := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, err := store.Balance(ctx, "cut")
		if err != nil {
			t.Fatal(err)
		}
		active, _ := keyUsage(t, &instance{name: "A", admin: admin}, keyID)
		if b.Held == 0 && active == 0 {
			return
		}
		if time.Now().After(limit) {
			rec, _ := store.Task(ctx, id)
			h, _ := store.HoldByID(ctx, rec.HoldID)
			r := call(t, "POST", base+taskPath, secret, `{"model":"seedance-sim","content":[{"type":"text","text":"next"}]}`)
			t.Fatalf("15 s after the task's record said finished (%s): its hold is %s (held %d µ), %v active tasks (the key's next create under max_active_tasks 1: %d %s); want it settled and the slot back",
				rec.Status, h.State, b.Held, active, r.status, r.body)
		}
	}
}

// TestFinalCallbackWhoseQueueingFailsIsSent: the write that queues a task's final callback
// (succeeded) never reaches redis-server (the connection is lost with it). docs/configuration.md
// promises delivery at least once; the callback must still reach the receiver.
func TestFinalCallbackWhoseQueueingFailsIsSent(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = time.Hour, 0, "sim-key"
	sim.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	upstream := httptest.NewServer(sim)
	defer upstream.Close()
	rc := newReceiver(t, func(int) int { return 200 })
	redis := testredis.Start(t, testredis.Options{})
	cutter := startLostWriteProxy(t, redis.URL())

	prefix := "mg-" + strings.ToLower(t.Name())
	adminPort, port := freePort(t), freePort(t)
	base, admin := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", adminPort)
	startCaddyProcess(t, fmt.Sprintf(finishEffectsCaddyfile, adminPort, "redis://"+cutter.addr, prefix, upstream.URL, port,
		"callbacks {\n\t\t\tallow_private\n\t\t}"), base+"/")
	r := call(t, "POST", "http://"+admin+"/mediagw/keys", "", `{"account":"cut"}`)
	secret := r.field("key")
	if r.status != 201 || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	r = call(t, "POST", base+taskPath, secret, `{"model":"seedance-sim","content":[{"type":"text","text":"cb"}],"callback_url":"`+rc.URL+`"}`)
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	status := func(want string) bool {
		for _, d := range rc.seen() {
			if d.status == want {
				return true
			}
		}
		return false
	}
	waitFor(t, "the queued callback", func() bool { return status("queued") })
	cutter.arm(callbacks.EventID(id, "succeeded")) // the write that queues the final callback
	shift.Store(int64(2 * time.Hour))
	waitFor(t, "the write of the final callback", func() bool { return cutter.cuts.Load() == 1 })
	for limit := time.Now().Add(20 * time.Second); !status("succeeded"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(limit) {
			r := call(t, "GET", base+taskPath+"/"+id, secret, nil)
			t.Fatalf("20 s after the task succeeded (the query answers %d %s), its succeeded callback never came (deliveries: %d); want it delivered at least once",
				r.status, r.field("status"), len(rc.seen()))
		}
	}
}

// createFinishTask creates a task of seedance-sim through the gateway at base and returns its id.
func createFinishTask(t *testing.T, base, key string) string {
	t.Helper()
	r := call(t, "POST", base+taskPath, key, `{"model":"seedance-sim","content":[{"type":"text","text":"finish"}]}`)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return r.field("id")
}

// lostWriteProxy is a TCP proxy in front of a redis-server that, once armed with a marker,
// drops the first request carrying it (the server never runs it: a write lost on its way) and
// closes that connection at once.
type lostWriteProxy struct {
	target, addr string
	marker       atomic.Pointer[string]
	cuts         atomic.Int32
}

// startLostWriteProxy starts a proxy to the redis-server at url (redis://host:port) on a
// loopback port; it stops with the test.
func startLostWriteProxy(t *testing.T, url string) *lostWriteProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &lostWriteProxy{target: strings.TrimPrefix(url, "redis://"), addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *lostWriteProxy) arm(marker string) { p.marker.Store(&marker) }

func (p *lostWriteProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				c.Write(buf[:n])
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if m := p.marker.Load(); m != nil && strings.Contains(string(buf[:n]), *m) && p.marker.CompareAndSwap(m, nil) {
				p.cuts.Add(1)
				c.Close()
				s.Close()
				return
			}
			s.Write(buf[:n])
		}
		if err != nil {
			s.Close()
			return
		}
	}
}
