package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

const exactChatCaddyfile = `{
	admin 127.0.0.1:%d
	persist_config off
	mediagw {
		storage badger %s
		provider held {
			base_url %s/v1
			api_key held-upstream-key
			models held-chat
		}
		price held-chat {
			request 0.01
		}
		key mg-exact {
			account exact
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy %s
	}
}
`

// TestBadgerPricedRequestsHoldExactlyTheBalance: 300 parallel priced chats through one gateway
// on Badger, against a balance that fits exactly 100 of their holds (0.01 each), while the
// upstream keeps every accepted chat waiting: exactly 100 are accepted and 200 refused with
// 402. A request's hold is kept in the gateway's memory until the request ends (transient),
// and still counts against the balance. Once the upstream answers, the ledger has each accepted
// chat's hold and settlement, once, and sums to a balance of 0.
func TestBadgerPricedRequestsHoldExactlyTheBalance(t *testing.T) {
	t.Parallel()
	const chats, fit = 300, 100
	release := make(chan struct{})
	var arrived atomic.Int64
	// The upstream: OpenAI's chat completion answer (platform.openai.com/docs/api-reference/chat/object),
	// given once the test lets the accepted chats go.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		arrived.Add(1)
		select {
		case <-release:
		case <-time.After(60 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"held-chat",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer up.Close()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo() // a failing test lets the upstream's waiters go

	dir := t.TempDir()
	adminPort, port := freePort(t), freePort(t)
	cfg := fmt.Sprintf(exactChatCaddyfile, adminPort, dir, up.URL, port, strings.TrimPrefix(up.URL, "http://"))
	ready := fmt.Sprintf("http://127.0.0.1:%d/", port)
	creditedStore(t, cfg, ready, dir, "exact", fit*10_000)
	ctx := context.Background()

	gw := startCaddyProcess(t, cfg, ready)
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port)
	var ok, refused atomic.Int64
	var mu sync.Mutex
	var other []string
	var wg sync.WaitGroup
	for range chats {
		wg.Go(func() {
			r, err := send("POST", url, "mg-exact", `{"model":"held-chat","messages":[{"role":"user","content":"hi"}]}`)
			switch {
			case err == nil && r.status == 200:
				ok.Add(1)
			case err == nil && r.status == 402:
				refused.Add(1)
			default:
				mu.Lock()
				other = append(other, fmt.Sprintf("%d %s %v", r.status, r.body, err))
				mu.Unlock()
			}
		})
	}
	// Every chat is either refused or waiting at the upstream before any is answered.
	for deadline := time.Now().Add(30 * time.Second); refused.Load()+arrived.Load() < chats; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(gw.log)
			t.Fatalf("after 30 s: %d refused, %d at the upstream, %d other; the gateway's log:\n%s", refused.Load(), arrived.Load(), len(other), log)
		}
	}
	if arrived.Load() != fit || refused.Load() != chats-fit {
		t.Fatalf("%d chats reached the upstream and %d were refused; want exactly %d and %d", arrived.Load(), refused.Load(), fit, chats-fit)
	}
	letGo()
	wg.Wait()
	if len(other) > 0 || ok.Load() != fit {
		t.Fatalf("%d answered 200; %d answered otherwise, e.g. %v", ok.Load(), len(other), other)
	}
	gw.kill()

	store := openBadgerStore(t, dir)
	defer func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	}()
	entries, _, err := store.LedgerPage(ctx, "exact", "", storage.MaxLedgerPage)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[string]string{}
	var sum int64
	for i, e := range entries[1:] {
		sum += e.Amount
		if i%2 == 0 && e.Kind != storage.EntryHold || i%2 == 1 && (e.Kind != storage.EntrySettle || e.HoldID != entries[i].HoldID) {
			t.Fatalf("entry %s = %+v; want each hold followed by its settlement", e.ID, e)
		}
		ends[e.HoldID] += e.Kind + " "
	}
	if len(entries) != 1+2*fit || len(ends) != fit {
		t.Fatalf("%d entries for %d holds; want a credit and %d holds, each settled once", len(entries), len(ends), fit)
	}
	bal, err := store.Balance(ctx, "exact")
	if err != nil || bal.Amount != 0 || bal.Held != 0 || sum != -fit*10_000 {
		t.Fatalf("balance %+v, %v; the holds and settlements sum to %d; want 0, nothing held", bal, err, sum)
	}
}
