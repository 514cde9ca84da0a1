package videotask

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
)

// A looked-up address is reused only while its signature says it is valid (ten seconds before
// its end at most, and five minutes at most); an address that says nothing is not reused.
func TestContentAddressReusedWhileItsSignatureLasts(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		address string
		want    time.Duration // 0: not reused
	}{
		{"https://cdn.example/v.mp4?sig=signed", 0},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(time.Hour).Unix()) + "&Signature=x", maxContentReuse},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(time.Minute).Unix()), 50 * time.Second},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(5*time.Second).Unix()), 0},
		{"https://cdn.example/v.mp4?Expires=-4", 0},
		{"https://cdn.example/v.mp4?Expires=abc", 0},
		{"https://s3.example/v.mp4?X-Amz-Date=20261130T115930Z&X-Amz-Expires=120&X-Amz-Signature=x", 80 * time.Second},
		{"https://s3.example/v.mp4?X-Amz-Date=20261130T115930Z&X-Amz-Expires=20", 0},
		{"https://gcs.example/v.mp4?X-Goog-Date=20261130T120000Z&X-Goog-Expires=86400", maxContentReuse},
		{"https://s3.example/v.mp4?X-Amz-Date=bad&X-Amz-Expires=120", 0},
	} {
		until, ok := reusableUntil(c.address, now)
		switch {
		case c.want == 0 && ok:
			t.Errorf("%s is reused until %v; want not reused", c.address, until)
		case c.want > 0 && (!ok || until.Sub(now) != c.want):
			t.Errorf("%s is reused for %v (%v); want %v", c.address, until.Sub(now), ok, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An account makes one content lookup at a time at an upstream with max_rps: while mallory's
// lookup runs, her next waits its turn, and alice's goes at once. Without max_rps there are no
// turns: her lookups go at once.
func TestContentLookupsTakeTurnsPerAccount(t *testing.T) {
	var b turnBoard
	b.turns = map[turnKey]*turn{}
	free := &providers.Upstream{Name: "free"}
	inner := false
	if err := b.with(context.Background(), free, "mallory", func() error {
		return b.with(context.Background(), free, "mallory", func() error { inner = true; return nil })
	}); err != nil || !inner {
		t.Fatalf("mallory's second lookup beside her first, without max_rps: %v (ran %v); want at once", err, inner)
	}
	u := &providers.Upstream{Name: "a", MaxRPS: 1}
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_ = b.with(context.Background(), u, "mallory", func() error { close(started); <-release; return nil })
	}()
	<-started
	second := make(chan struct{})
	go func() {
		_ = b.with(context.Background(), u, "mallory", func() error { close(second); return nil })
	}()
	ran := false
	if err := b.with(context.Background(), u, "alice", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("alice's lookup beside mallory's: %v (ran %v)", err, ran)
	}
	select {
	case <-second:
		t.Fatal("mallory's second lookup ran beside her first")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("mallory's second lookup did not run after her first ended")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		n := len(b.turns)
		b.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d turns kept after every lookup ended", n)
		}
	}
}
