package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// oneSlotTaskCaddyfile serves the task API for a key that may have one active task, in front of
// an Ark provider.
const oneSlotTaskCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url {{up_url}}/api/v3
			api_key ark-operator-key
			models seedance-sim
		}
		key mg-one-slot {
			account one-slot
			max_active_tasks 1
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// stallingArkProvider makes a task for each create, as Ark's create does, but answers the first
// one only once release is closed: a create that takes the provider longer than its client's
// timeout. Its tasks stay queued.
type stallingArkProvider struct {
	creates  atomic.Int64
	received chan struct{}
	release  chan struct{}
	once     sync.Once
}

func (p *stallingArkProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer ark-operator-key" {
		writeFakeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": "AuthenticationError", "message": "bad key", "type": "Unauthorized"}})
		return
	}
	if r.Method == http.MethodGet {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		writeFakeJSON(w, http.StatusOK, map[string]any{"id": id, "model": "seedance-sim", "status": "queued", "created_at": time.Now().Unix(), "updated_at": time.Now().Unix()})
		return
	}
	n := p.creates.Add(1)
	if n == 1 {
		close(p.received)
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
	}
	writeFakeJSON(w, http.StatusOK, map[string]any{"id": "cgt-one-slot-" + string(rune('0'+n))})
}

// TestGaveUpTaskCreateRetriedAtTheSlotLimit: on the task API, a key with max_active_tasks 1
// creates a task with an Idempotency-Key and gives up on it while the provider makes it; the
// gateway goes on and records the task, which holds the key's one slot. The Ark SDK's create
// with the same key, sent while the first is still being made, waits for it and gets its task
// (the Ark SDK does not retry a 409, so idempotency_in_progress would have been its answer); sent
// again afterwards it gets the task again. Neither reaches the provider or takes the slot: a
// create with a new key is still refused 429 without reaching it.
func TestGaveUpTaskCreateRetriedAtTheSlotLimit(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	provider := &stallingArkProvider{received: make(chan struct{}), release: make(chan struct{})}
	up := startFake(t, provider)
	var once sync.Once
	release := func() { once.Do(func() { close(provider.release) }) }
	t.Cleanup(release) // before the provider's Close, which waits for its stalled create
	base, _ := startSimGateway(t, oneSlotTaskCaddyfile, map[string]string{"up_url": up.URL})
	const key = "ark-retry-slot"
	body := `{"model":"seedance-sim","content":[{"type":"text","text":"a lighthouse at dusk"}]}`

	giveUpOnCreate(t, base+"/api/v3/contents/generations/tasks", "mg-one-slot", body, key, provider.received)

	ark := arkClient(base, "mg-one-slot")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prompt := "a lighthouse at dusk"
	task := model.CreateContentGenerationTaskRequest{Model: "seedance-sim", Content: []*model.CreateContentGenerationContentItem{
		{Type: model.ContentGenerationContentItemTypeText, Text: &prompt}}}
	type answer struct {
		id  string
		err error
	}
	retried := make(chan answer, 1)
	go func() {
		got, err := ark.CreateContentGenerationTask(ctx, task, arkruntime.WithCustomHeader("Idempotency-Key", key))
		retried <- answer{got.ID, err}
	}()
	select {
	case a := <-retried:
		t.Fatalf("the retry was answered while its first attempt ran: %q, %v", a.id, a.err)
	case <-time.After(500 * time.Millisecond):
	}
	release()
	a := <-retried
	if a.err != nil || a.id != "cgt-one-slot-1" {
		t.Fatalf("the retry while the first attempt ran = %q, %v; want cgt-one-slot-1", a.id, a.err)
	}
	again, err := ark.CreateContentGenerationTask(ctx, task, arkruntime.WithCustomHeader("Idempotency-Key", key))
	if err != nil || again.ID != "cgt-one-slot-1" {
		t.Fatalf("the retry after the first attempt = %q, %v; want cgt-one-slot-1", again.ID, err)
	}
	if _, err := ark.CreateContentGenerationTask(ctx, task, arkruntime.WithCustomHeader("Idempotency-Key", "another-task")); httpStatus(err) != http.StatusTooManyRequests {
		t.Fatalf("a new create at the limit = %v, want 429", err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/contents/generations/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer mg-one-slot")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "a-third-task")
	if r := do(t, req); r.status != http.StatusTooManyRequests || r.field("code") != "too_many_active_tasks" {
		t.Fatalf("a new create at the limit = %d %s, want 429 too_many_active_tasks", r.status, r.body)
	}
	if n := provider.creates.Load(); n != 1 {
		t.Fatalf("the provider got %d creates, want 1", n)
	}
}
