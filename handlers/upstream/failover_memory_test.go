package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/zap"
)

// A create that moves on from an upstream's refusal lets go of the refusal's body before it
// calls the next upstream: with a reservation that its answers share (an edit's), the budget
// counts the larger of the two answers, and the memory held while the next answer is read must
// not be both (before, a 16 MiB refusal was alive while a 16 MiB answer was read: 32 MiB held,
// 16 MiB counted). Not parallel: it reads the process's live heap.
func TestFailoverHoldsWhatItCounts(t *testing.T) {
	const size = 16 << 20
	refusal := make([]byte, size)
	for i := range refusal {
		refusal[i] = 'x'
	}
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(refusal)))
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(refusal)
	}))
	defer busy.Close()
	var budget *AnswerBudget
	var base, grown int64
	var counted int64
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		grown, counted = liveHeap()-base, budget.Held() // while the next upstream is called
		w.Write([]byte(`{"id":"t1"}`))
	}))
	defer fine.Close()
	p := failoverProvider(t, busy, fine)
	budget = NewAnswerBudget(64<<20, 64<<20)
	room, ok := budget.Reserve("acct", 64<<10)
	if !ok {
		t.Fatal("no room for the reservation")
	}
	defer room.Release()
	c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), Budget: budget, Account: "acct", Hold: room, MaxAnswer: 32 << 20}
	base = liveHeap()
	ans, u, err := c.Create(context.Background(), "acct", p, "x", []byte(`{}`))
	if err != nil || u == nil || u.Name != "b" {
		t.Fatalf("Create = %v, want b's answer after a's refusal", err)
	}
	ans.Release()
	t.Logf("while the next upstream was called: %d bytes counted, the heap %d bytes larger than before the create", counted, grown)
	if counted < size || grown > size/2 {
		t.Fatalf("while the next upstream was called, %d bytes were counted and the heap held %d bytes more: the %d-byte refusal was still alive", counted, grown, size)
	}
}

// liveHeap is the bytes of the heap's live objects, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
