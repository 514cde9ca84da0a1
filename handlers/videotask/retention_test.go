package videotask

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// relayTTLStore records the lifetime asked for relay tokens.
type relayTTLStore struct {
	storage.Store
	mu  sync.Mutex
	ttl time.Duration
}

func (s *relayTTLStore) SetRelayToken(ctx context.Context, tokenHash, taskID string, ttl time.Duration) error {
	s.mu.Lock()
	s.ttl = ttl
	s.mu.Unlock()
	return s.Store.SetRelayToken(ctx, tokenHash, taskID, ttl)
}

// A task's relay token lives as long as the task may run plus the retention, so an upstream
// callback for a task that runs past the retention is still relayed.
func TestRelayTokenOutlivesALongTask(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"cgt-long"}`)
	})
	h := newHandler(t, up.URL, nil)
	store := &relayTTLStore{Store: h.Store}
	h.Store, h.RelayBase, h.Retention = store, "https://gw.example.com", time.Hour
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if want := storage.MaxTaskRun + time.Hour; store.ttl != want {
		t.Fatalf("relay token kept %s, want %s", store.ttl, want)
	}
}
