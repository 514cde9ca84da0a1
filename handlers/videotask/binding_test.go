package videotask

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

// catalogAt is newHandler's catalog (provider p, its one upstream "default") at another address
// or with another key.
func catalogAt(t *testing.T, base, key string) *providers.Catalog {
	t.Helper()
	u, _ := url.Parse(base + "/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: u, APIKey: key, Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A task stays bound to the address of the upstream that created it: a new key there keeps it
// followed (with the new key), while the upstream's name configured for another base URL never
// hears of the task, which finishes as failed with a message that says why. A record written
// before addresses were kept is still bound by name.
func TestTaskBoundToItsUpstreamsAddress(t *testing.T) {
	first := newSimUpstream(t, time.Hour, time.Hour, true)
	h := newHandler(t, first.URL, nil)
	h.Client.Timeout = 10 * time.Second
	h.RefreshInterval = time.Nanosecond // every query reads the upstream
	ids := createTasks(t, h, 2)
	task, err := h.Store.Task(context.Background(), ids[0])
	if err != nil || task.UpstreamAddress != strings.ToLower(first.URL)+"/api/v3" {
		t.Fatalf("record %+v, %v: want the upstream's address", task, err)
	}

	h.Catalog = catalogAt(t, first.URL, "rotated-key")
	w := serve(h, "GET", createPath+"/"+ids[0], "")
	if body := decode(t, w); w.Code != 200 || body["status"] != "queued" || first.auth.Load() != "Bearer rotated-key" {
		t.Fatalf("after a key rotation: %d %s, upstream saw %v", w.Code, w.Body, first.auth.Load())
	}

	// An old record (no address) of the second task.
	if _, err := storage.UpdateTask(context.Background(), h.Store, ids[1], func(t *storage.Task) error {
		t.UpstreamAddress = ""
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	other := newSimUpstream(t, time.Hour, time.Hour, true)
	h.Catalog = catalogAt(t, other.URL, "other-key")
	before := first.calls.Load()
	w = serve(h, "GET", createPath+"/"+ids[0], "")
	body := decode(t, w)
	failure, _ := body["error"].(map[string]any)
	msg, _ := failure["message"].(string)
	if w.Code != 200 || body["status"] != StatusFailed || !strings.Contains(msg, "p/default that ran this task is now configured with another base URL") {
		t.Fatalf("query after the name moved: %d %s", w.Code, w.Body)
	}
	other.mu.Lock()
	asked := other.readsPerTask[ids[0]]
	other.mu.Unlock()
	if asked != 0 || other.calls.Load() != 0 || first.calls.Load() != before {
		t.Fatalf("the task was asked for: %d reads at the new address, %d calls there", asked, other.calls.Load())
	}
	if w := serve(h, "DELETE", createPath+"/"+ids[0], ""); w.Code == 200 || other.calls.Load() != 0 {
		t.Fatalf("cancel after the name moved: %d %s, %d calls at the new address", w.Code, w.Body, other.calls.Load())
	}

	// The old record is followed by name, as before.
	if w := serve(h, "GET", createPath+"/"+ids[1], ""); w.Code != 400 || other.calls.Load() == 0 {
		t.Fatalf("old record: %d %s, %d calls at the named upstream", w.Code, w.Body, other.calls.Load())
	}
}

// A create that names a draft task (content[].draft_task.id) goes to the upstream that made the
// draft, and only there, at the address it had then: not to the provider's first choice, and
// not to a name now configured with another base URL (the draft is then refused like an unknown
// id, and nothing is created or charged).
func TestDraftBindsTheCreateToItsUpstream(t *testing.T) {
	created := func(id string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"id":"`+id+`"}`) }
	}
	a, b := newFakeUpstream(t, created("cgt-on-a")), newFakeUpstream(t, created("cgt-on-b"))
	h := newHandler(t, a.URL, nil)
	twoUpstreams := func(bBase string) *providers.Catalog {
		ua, _ := url.Parse(a.URL + "/api/v3")
		ub, _ := url.Parse(bBase + "/api/v3")
		cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", Models: []string{"m"}, Upstreams: []*providers.Upstream{
			{Name: "a", BaseURL: ua, APIKey: "key-a"},
			{Name: "b", BaseURL: ub, APIKey: "key-b", Priority: 1}, // a is always tried first
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return cat
	}
	h.Catalog = twoUpstreams(b.URL)
	ctx := context.Background()
	if _, err := h.Store.CreateTask(ctx, storage.Task{ID: "cgt-draft", Kind: storage.KindVideo, Account: "acme", Provider: "p",
		Upstream: "b", UpstreamAddress: strings.ToLower(b.URL) + "/api/v3", Model: "m", CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	const withDraft = `{"model":"m","content":[{"type":"text","text":"hi"},{"type":"draft_task","draft_task":{"id":"cgt-draft"}}]}`
	if w := serve(h, "POST", createPath, withDraft); w.Code != 200 || a.calls.Load() != 0 || b.calls.Load() != 1 {
		t.Fatalf("create from a draft made on b: %d %s; calls at a %d, at b %d", w.Code, w.Body, a.calls.Load(), b.calls.Load())
	}
	if task, err := h.Store.Task(ctx, "cgt-on-b"); err != nil || task.Upstream != "b" {
		t.Fatalf("record %+v, %v", task, err)
	}
	// Without a draft the provider's order applies.
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 || a.calls.Load() != 1 {
		t.Fatalf("create: %d %s; calls at a %d", w.Code, w.Body, a.calls.Load())
	}
	// The name b now stands for another base URL: the draft is not there.
	moved := newFakeUpstream(t, created("cgt-moved"))
	h.Catalog = twoUpstreams(moved.URL)
	w := serve(h, "POST", createPath, withDraft)
	if m := decode(t, w); w.Code != 400 || !strings.Contains(m["message"].(string), "content[1].draft_task.id") {
		t.Fatalf("draft after b moved: %d %s", w.Code, w.Body)
	}
	if moved.calls.Load() != 0 || a.calls.Load() != 1 {
		t.Fatalf("the draft's create went out: %d calls at the new address, %d at a", moved.calls.Load(), a.calls.Load())
	}
}
