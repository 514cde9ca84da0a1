package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// channelTasksCaddyfile is a video provider with two upstreams.
const channelTasksCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		watcher {
			interval 200ms
		}
		provider {{provider}} {
			models seedance-client
			model_map seedance-client seedance-1-0-pro-250528
			upstream a {
				base_url {{a_url}}/api/v3
				api_key key-a
				priority {{a_priority}}
			}
			{{b_block}}
		}
		key mg-tasks {
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 50ms
		}
		respond 404
	}
}
`

func bBlock(url, priority string) string {
	return fmt.Sprintf("upstream b {\n\t\t\t\tbase_url %s/api/v3\n\t\t\t\tapi_key key-b\n\t\t\t\tpriority %s\n\t\t\t}", url, priority)
}

// arkChannel is a fake Ark upstream account: it creates queued tasks, answers queries and
// cancels, records every call, and refuses creates with 429 on command.
type arkChannel struct {
	*httptest.Server
	name, key    string
	refuseCreate atomic.Bool
	refused      atomic.Int64

	mu      sync.Mutex
	created []string
	calls   []string // "METHOD id" for queries and cancels
	models  []string
}

func newArkChannel(t *testing.T, name, key string) *arkChannel {
	c := &arkChannel{name: name, key: key}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *arkChannel) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+c.key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"code":"AuthenticationError","message":"wrong key"}}`)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/api/v3/contents/generations/tasks")
	id = strings.TrimPrefix(id, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && id == "":
		if c.refuseCreate.Load() {
			c.refused.Add(1)
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":"RateLimitExceeded","message":"slow down"}}`)
			return
		}
		var body struct {
			Model string `json:"model"`
		}
		decodeJSONBody(r, &body)
		c.models = append(c.models, body.Model)
		tid := fmt.Sprintf("cgt-%s-%d", c.name, len(c.created)+1)
		c.created = append(c.created, tid)
		fmt.Fprintf(w, `{"id":%q}`, tid)
	case r.Method == http.MethodGet && id != "":
		c.calls = append(c.calls, "GET "+id)
		fmt.Fprintf(w, `{"id":%q,"model":"seedance-1-0-pro-250528","status":"queued","created_at":1,"updated_at":1}`, id)
	case r.Method == http.MethodDelete && id != "":
		c.calls = append(c.calls, "DELETE "+id)
		fmt.Fprint(w, `{}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"NotFound","message":"no"}}`)
	}
}

func (c *arkChannel) snapshot() (created, calls, models []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.created...), append([]string(nil), c.calls...), append([]string(nil), c.models...)
}

const taskBody = `{"model":"seedance-client","content":[{"type":"text","text":"a lighthouse"}]}`

// A task created on upstream A is queried and cancelled on A after a reload that makes B the
// only upstream new tasks go to.
func TestChannelsTaskStaysWithItsUpstream(t *testing.T) {
	a, b := newArkChannel(t, "a", "key-a"), newArkChannel(t, "b", "key-b")
	base, g := startSimGateway(t, channelTasksCaddyfile, map[string]string{
		"a_url": a.URL, "a_priority": "0", "b_block": bBlock(b.URL, "1"), "provider": uniqueName("ark"),
	})
	r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
	taskA := r.field("id")
	if r.status != http.StatusOK || taskA != "cgt-a-1" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}

	// Reload with both upstreams at one priority; A refuses new tasks with 429 and Retry-After
	// 60, so after its first refusal it cools down and B is the only healthy upstream.
	g.vars["b_block"] = bBlock(b.URL, "0")
	if err := g.reload(channelTasksCaddyfile); err != nil {
		t.Fatal(err)
	}
	a.refuseCreate.Store(true)
	for i := 0; a.refused.Load() == 0; i++ {
		r = call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
		if r.status != http.StatusOK || !strings.HasPrefix(r.field("id"), "cgt-b-") || i == 50 {
			t.Fatalf("create %d after reload: %d %s (A refused %d)", i, r.status, r.body, a.refused.Load())
		}
	}
	r = call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
	if r.status != http.StatusOK || a.refused.Load() != 1 {
		t.Fatalf("create while A cools down: %d %s; A refused %d", r.status, r.body, a.refused.Load())
	}

	r = call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks/"+taskA, "mg-tasks", nil)
	if r.status != http.StatusOK || r.field("id") != taskA || r.field("model") != "seedance-client" {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	r = call(t, http.MethodDelete, base+"/api/v3/contents/generations/tasks/"+taskA, "mg-tasks", nil)
	if r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	_, aCalls, aModels := a.snapshot()
	_, bCalls, _ := b.snapshot()
	if !containsString(aCalls, "GET "+taskA) || !containsString(aCalls, "DELETE "+taskA) {
		t.Fatalf("A saw %v; want the query and the cancel of %s", aCalls, taskA)
	}
	for _, c := range bCalls {
		if strings.HasSuffix(c, " "+taskA) {
			t.Fatalf("B was asked about A's task: %v", bCalls)
		}
	}
	if len(aModels) != 1 || aModels[0] != "seedance-1-0-pro-250528" {
		t.Fatalf("A received models %v; want the upstream id", aModels)
	}
}

// A create whose first upstream refused the connection is retried on the next and makes
// exactly one upstream task.
func TestChannelsCreateRetriedAfterRefusal(t *testing.T) {
	b := newArkChannel(t, "b", "key-b")
	base, _ := startSimGateway(t, channelTasksCaddyfile, map[string]string{
		"a_url": refusingURL(t), "a_priority": "0", "b_block": bBlock(b.URL, "1"), "provider": uniqueName("ark"),
	})
	r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
	if r.status != http.StatusOK || r.field("id") != "cgt-b-1" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	created, _, _ := b.snapshot()
	if len(created) != 1 {
		t.Fatalf("B created %v; want exactly one task", created)
	}
	r = call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks/cgt-b-1", "mg-tasks", nil)
	if r.status != http.StatusOK || r.field("status") != "queued" {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
}

// A task whose upstream left the configuration finishes as failed, with a message that says so.
// So does a task whose upstream's name now stands for another account at another base URL: the
// task is never asked about there (its id would reach a third party, with the new account's key).
func TestChannelsTaskOfRemovedUpstreamFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reload  func(g *gateway, bURL string) error
		message string
	}{
		{"upstream removed", func(g *gateway, bURL string) error {
			// The config keeps only B, renamed c.
			g.vars["a_url"], g.vars["b_block"] = bURL, ""
			return g.reload(strings.Replace(channelTasksCaddyfile, "upstream a {", "upstream c {", 1))
		}, "/a that ran this task is no longer configured"},
		{"name reused for another base URL", func(g *gateway, bURL string) error {
			// Upstream a is now B's account: B's base URL and key, under A's name.
			g.vars["a_url"], g.vars["b_block"] = bURL, ""
			return g.reload(strings.Replace(channelTasksCaddyfile, "api_key key-a", "api_key key-b", 1))
		}, "/a that ran this task is now configured with another base URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newArkChannel(t, "a", "key-a"), newArkChannel(t, "b", "key-b")
			base, g := startSimGateway(t, channelTasksCaddyfile, map[string]string{
				"a_url": a.URL, "a_priority": "0", "b_block": bBlock(b.URL, "1"), "provider": uniqueName("ark"),
			})
			r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
			if r.status != http.StatusOK || r.field("id") != "cgt-a-1" {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			if err := tc.reload(g, b.URL); err != nil {
				t.Fatal(err)
			}
			r = call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks/cgt-a-1", "mg-tasks", nil)
			var task struct {
				Status string
				Error  struct{ Code, Message string }
			}
			decodeJSON(t, r.body, &task)
			if r.status != http.StatusOK || task.Status != "failed" || task.Error.Code != "upstream_removed" || !strings.Contains(task.Error.Message, tc.message) {
				t.Fatalf("query: %d %s", r.status, r.body)
			}
			if r := call(t, http.MethodDelete, base+"/api/v3/contents/generations/tasks/cgt-a-1", "mg-tasks", nil); r.status == http.StatusOK {
				t.Fatalf("cancel: %d %s", r.status, r.body)
			}
			if _, bCalls, _ := b.snapshot(); len(bCalls) != 0 {
				t.Fatalf("B was asked about A's task: %v", bCalls)
			}
		})
	}
}

func containsString(list []string, s string) bool { return slices.Contains(list, s) }

// decodeJSONBody decodes a fake upstream's request body; a bad one leaves v empty, which the
// test then sees.
func decodeJSONBody(r *http.Request, v any) {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return
	}
}
