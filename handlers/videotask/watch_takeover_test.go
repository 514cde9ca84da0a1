package videotask

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// watcherHeader marks a watcher's upstream requests with its name (X-Watcher).
type watcherHeader struct{ name string }

func (h watcherHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Watcher", h.name)
	return http.DefaultTransport.RoundTrip(r)
}

// Two watchers (two gateway processes on one Redis) share the tasks: a starts alone, b joins
// and a hands it half the shards; then a is killed (it stops renewing and never leaves). The
// survivor reads every task of the dead watcher's shards within an interval and a tick of the
// kill (a's last reads were recorded a tick ahead), with 0.2 interval of slack for a loaded
// machine; and no task is ever read twice within
// 0.9 interval, by either watcher, across the join, the kill or the takeover.
func TestSurvivorReadsAKilledWatchersTasksWithinAnInterval(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	openStore := func() storage.Store {
		r, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL(), Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	up := newSimUpstream(t, time.Hour, time.Hour, true)
	const interval = 1500 * time.Millisecond
	handler := func(name string) *Handler {
		h := newHandler(t, up.URL, openStore())
		h.Client = &http.Client{Timeout: 10 * time.Second, Transport: watcherHeader{name}}
		return h
	}
	hA, hB := handler("a"), handler("b")
	ids := createTasks(t, hA, 48)
	a := &Watcher{Tasks: hA, Interval: interval, RatePerSecond: 1000, Concurrency: 4, Owner: "a"}
	b := &Watcher{Tasks: hB, Interval: interval, RatePerSecond: 1000, Concurrency: 4, Owner: "b"}
	stopA, doneA := make(chan struct{}), make(chan struct{})
	go func() { a.run(stopA); close(doneA) }()
	time.Sleep(interval * 6 / 5)
	stopB, doneB := make(chan struct{}), make(chan struct{})
	go func() { b.Run(stopB); close(doneB) }()
	stopped := false
	stopB2 := func() {
		if !stopped {
			stopped = true
			close(stopB)
			<-doneB
		}
	}
	t.Cleanup(stopB2)

	time.Sleep(2 * interval)
	aShards := a.heldShards()
	if len(aShards) == 0 || len(b.heldShards()) == 0 {
		t.Fatalf("before the kill: a holds %v, b %v; want both some", aShards, b.heldShards())
	}
	killed := time.Now()
	close(stopA)
	<-doneA
	time.Sleep(interval + interval/2)
	stopB2()

	up.mu.Lock()
	reads := slices.Clone(up.reads)
	up.mu.Unlock()
	byTask := map[string][]upstreamRead{}
	for _, r := range reads {
		byTask[r.task] = append(byTask[r.task], r)
	}
	slack := a.ownershipTick() + interval/5
	var ofA int
	var longest time.Duration
	for _, id := range ids {
		rs := byTask[id]
		for i := 1; i < len(rs); i++ {
			if gap := rs[i].at.Sub(rs[i-1].at); gap < interval*9/10 {
				t.Errorf("task %s read by %s and then by %s %v later (%.2f interval)", id, rs[i-1].watcher, rs[i].watcher, gap, float64(gap)/float64(interval))
			}
		}
		if !slices.Contains(aShards, storage.TaskShard(id, a.Shards)) {
			continue
		}
		ofA++
		if !slices.ContainsFunc(rs, func(r upstreamRead) bool { return r.watcher == "a" && r.at.Before(killed) }) {
			t.Errorf("task %s of a's shards was never read by a before the kill", id)
		}
		first := slices.IndexFunc(rs, func(r upstreamRead) bool { return r.watcher == "b" && r.at.After(killed) })
		if first < 0 {
			t.Errorf("task %s of a's shards was not read by b after the kill", id)
			continue
		}
		took := rs[first].at.Sub(killed)
		longest = max(longest, took)
		if took > interval+slack {
			t.Errorf("task %s of a's shards was read by b %v after the kill (%.2f interval)", id, took, float64(took)/float64(interval))
		}
	}
	if ofA == 0 {
		t.Fatal("no task fell in a's shards")
	}
	t.Logf("b read each of a's %d tasks within %.2f interval of the kill", ofA, float64(longest)/float64(interval))
}
