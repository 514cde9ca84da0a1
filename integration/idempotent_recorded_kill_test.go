package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestIdempotentCreateRecordedBeforeAKillIsNotMadeAgain: an idempotent task create whose
// gateway (A) wrote the task's record, and so owns, lists, watches and charges the task, and
// was then killed (SIGKILL) before it stored the answer under the Idempotency-Key. The
// client's retry with that key through gateway B, once A's lease ran out, must answer that
// task, not create and charge a second one: the request was made, and recorded.
//
// The test stops A (SIGSTOP) as soon as the task's record is in the store, and kills it only
// when the key is then still in flight; otherwise it lets A go on and tries again with a new key.
func TestIdempotentCreateRecordedBeforeAKillIsNotMadeAgain(t *testing.T) {
	t.Parallel()
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = time.Hour, time.Hour, "sim-key"
	created := make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			sim.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		var answer struct{ ID string }
		if json.Unmarshal(rec.Body.Bytes(), &answer) == nil && answer.ID != "" {
			select {
			case created <- answer.ID:
			default:
			}
		}
	}))
	defer upstream.Close()

	redis := testredis.Start(t, testredis.Options{})
	prefix := "mg-" + strings.ToLower(t.Name())
	launch := func() (*caddyProcess, string, string) {
		adminPort, port := freePort(t), freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := startCaddyProcess(t, fmt.Sprintf(cancelRacesCaddyfile, adminPort, redis.URL(), prefix, upstream.URL, port, "idempotency_lease 3s"), base+"/")
		return p, base, fmt.Sprintf("127.0.0.1:%d", adminPort)
	}
	a, aBase, aAdmin := launch()
	r := call(t, "POST", "http://"+aAdmin+"/mediagw/keys", "", `{"account":"idem"}`)
	secret := r.field("key")
	if r.status != 201 || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	ctx := context.Background()
	store, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: redis.URL(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	const body = `{"model":"seedance-sim","content":[{"type":"text","text":"once"}]}`
	create := func(base, key string) response {
		req, _ := http.NewRequest("POST", base+taskPath, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return response{body: []byte(err.Error())}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, body: b}
	}
	// inFlight reports whether an idempotency key of the store is still in flight.
	inFlight := func() bool {
		keys, err := redis.Do("KEYS", "*:i:*").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if f, _ := redis.Do("HGET", k, "f").ToString(); f == "1" {
				return true
			}
		}
		return false
	}

	var key, first string
	for attempt := 0; ; attempt++ {
		if attempt == 40 {
			t.Fatal("in 40 creates, A was never stopped between its task's record and its idempotent answer")
		}
		key = fmt.Sprint("idem-", attempt)
		answered := make(chan response, 1)
		go func() { answered <- create(aBase, key) }()
		select {
		case first = <-created:
		case <-time.After(30 * time.Second):
			t.Fatal("the create never reached the upstream")
		}
		for limit := time.Now().Add(5 * time.Second); time.Now().Before(limit); {
			if _, err := store.Task(ctx, first); err == nil {
				break
			}
		}
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Task(ctx, first); err == nil && inFlight() {
			t.Logf("A stopped and killed at its create %d: task %s recorded, its key still in flight", attempt, first)
			a.kill()
			break
		}
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if r := <-answered; r.status != 200 {
			t.Fatalf("create %d = %d %s", attempt, r.status, r.body)
		}
	}

	_, bBase, _ := launch()
	var retry response
	for limit := time.Now().Add(30 * time.Second); ; {
		retry = create(bBase, key)
		if retry.status != 409 || time.Now().After(limit) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	ids, _ := json.Marshal(first)
	if retry.status != 200 || !bytes.Contains(retry.body, ids) {
		ledger, _ := json.Marshal(func() map[string]int { _, k := ledgerSum(t, store, "idem"); return k }())
		t.Fatalf("the retry on B of the key whose task %s A recorded = %d %s; want that task (ledger of the account now: %s)", first, retry.status, retry.body, ledger)
	}
}
