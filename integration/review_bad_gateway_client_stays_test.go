package integration

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestReviewBadGatewayThenRefusedIsReleasedAsWhenTheClientLeft: the same upstream events as
// TestBadGatewayThenNeverSentIsReleased (the first upstream answers 502, the gateway fails over),
// but the second upstream refuses (503) and the client waits for the answer. What the provider
// did does not depend on whether the client waited: the chat must end as it does when the client
// leaves. The rule decided: a 502 is a refusal (the issue: a request the upstream refuses releases
// its hold), so both are released. (The review's first version asked for both to be charged.)
func TestReviewBadGatewayThenRefusedIsReleasedAsWhenTheClientLeft(t *testing.T) {
	var got atomic.Int64
	relay := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		writeFakeJSON(w, 502, map[string]any{"error": map[string]any{"message": "upstream connect error", "type": "server_error"}})
	}))
	busy := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeFakeJSON(w, 503, map[string]any{"error": map[string]any{"message": "overloaded", "type": "server_error"}})
	}))
	base, g := startSimGateway(t, failoverNeverSentCaddyfile, map[string]string{"first": relay.URL, "stalled": busy.URL})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "fo", "10", "fo-1")
	if err := chatUntilGivenUp(t, base, 20*time.Second); err == nil {
		t.Fatal("a chat answered 502 and 503 succeeded")
	}
	if got.Load() != 1 {
		t.Fatalf("the relay got %d requests; want 1", got.Load())
	}
	held, end := "", ""
	for deadline := time.Now().Add(10 * time.Second); end == "" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		held, end = toolEnded(t, g, "fo", 0)
	}
	if held == "" || end != "release" {
		t.Errorf("a chat answered 502 by a relay, then 503 by the other upstream, its client waiting: held %q, ended %q; want released, as when its client leaves", held, end)
	}
}
