package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

const pricedChatProcessCaddyfile = `{
	admin 127.0.0.1:%d
	persist_config off
	mediagw {
		storage badger %s
		provider sim {
			base_url http://127.0.0.1:%d/v1
			api_key sim-upstream-key
			models sim-chat
		}
		price sim-chat {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-killed-chat {
			account killed
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy 127.0.0.1:%d
	}
}

http://127.0.0.1:%d {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// pricedChatStore makes the Badger store of a gateway configured by pricedChatProcessCaddyfile
// (a first gateway makes it), credits the account "killed" with credit while no gateway has it
// open, and returns the configuration, the gateway's ready URL, the store's folder and its port.
func pricedChatStore(t *testing.T, credit int64) (cfg, ready, dir string, port int) {
	t.Helper()
	dir = t.TempDir()
	adminPort, simPort := freePort(t), freePort(t)
	port = freePort(t)
	cfg = fmt.Sprintf(pricedChatProcessCaddyfile, adminPort, dir, simPort, port, simPort, simPort)
	ready = fmt.Sprintf("http://127.0.0.1:%d/", port)
	creditedStore(t, cfg, ready, dir, "killed", credit)
	return cfg, ready, dir, port
}

// creditedStore makes the Badger store in dir of a gateway configured by cfg (a first gateway,
// ready at ready, makes it) and credits account with credit while no gateway has it open.
func creditedStore(t *testing.T, cfg, ready, dir, account string, credit int64) {
	t.Helper()
	startCaddyProcess(t, cfg, ready).kill()
	store := openBadgerStore(t, dir)
	if _, err := store.Credit(context.Background(), storage.Credit{Account: account, Amount: credit, IdempotencyKey: "c"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPricedRequestsLedgerSurvivesSIGKILL: the ledger writes of a pass-through request (its
// hold and its settlement) are acknowledged before their disk sync (docs/billing.md, "Crash
// semantics"); a gateway killed with SIGKILL right after its last answer must still have every
// one of them when it starts again: each answered chat held and settled once at its usage
// (0.015), nothing held, and the ledger summing to the balance.
func TestPricedRequestsLedgerSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	const chats, parallel = 48, 8
	const credit, charge = 10_000_000, 15_000 // 5 input and 5 output tokens: 0.005 + 0.01
	cfg, ready, dir, port := pricedChatStore(t, credit)
	ctx := context.Background()

	gw := startCaddyProcess(t, cfg, ready)
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port)
	var wg sync.WaitGroup
	errs := make(chan error, chats)
	for w := range parallel {
		wg.Go(func() {
			for i := w; i < chats; i += parallel {
				r, err := send("POST", url, "mg-killed-chat", `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`)
				if err == nil && r.status != 200 {
					err = fmt.Errorf("chat %d = %d %s", i, r.status, r.body)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	gw.kill() // SIGKILL, at once: the last settlements are not synced yet
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	store := openBadgerStore(t, dir)
	defer func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	}()
	entries, _, err := store.LedgerPage(ctx, "killed", "", storage.MaxLedgerPage)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	settled := map[string]int{}
	var sum int64
	for _, e := range entries {
		sum += e.Amount
		kinds[e.Kind]++
		if e.Kind == storage.EntrySettle {
			settled[e.HoldID]++
			if e.Charged != charge {
				t.Errorf("hold %s settled at %d, want %d", e.HoldID, e.Charged, charge)
			}
		}
	}
	if kinds[storage.EntryHold] != chats || kinds[storage.EntrySettle] != chats || len(settled) != chats {
		t.Fatalf("after SIGKILL the ledger has %v (%d holds settled); want %d holds, each settled once", kinds, len(settled), chats)
	}
	bal, err := store.Balance(ctx, "killed")
	if err != nil || bal.Amount != sum || bal.Amount != credit-chats*charge || bal.Held != 0 {
		t.Fatalf("balance %+v, %v; the ledger sums to %d, want %d", bal, err, sum, credit-chats*charge)
	}
}
