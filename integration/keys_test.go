package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const keysCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
			cost sim-video 2
		}
		provider broken {
			base_url http://127.0.0.1:1/api/v3
			models broken-video
		}
		key mg-static-admin-test {
			id static-key
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 50ms
		}
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 300ms
		running_for 300ms
		api_key sim-key
	}
}
`

type keysEnv struct {
	g    *gateway
	base string
}

func startKeysGateway(t *testing.T) keysEnv {
	base, g := startSimGateway(t, keysCaddyfile, nil)
	return keysEnv{g: g, base: base}
}

// admin calls the admin API.
func (e keysEnv) admin(t *testing.T, method, path string, body any) response {
	t.Helper()
	return call(t, method, "http://"+e.g.admin+path, "", body)
}

// newKey creates a key through the admin API and returns its id and secret.
func (e keysEnv) newKey(t *testing.T, body string) (id, secret string) {
	t.Helper()
	r := e.admin(t, "POST", "/mediagw/keys", body)
	if r.status != 201 {
		t.Fatalf("create key = %d %s", r.status, r.body)
	}
	m := r.json(t)
	return m["id"].(string), m["key"].(string)
}

func (e keysEnv) createTask(t *testing.T, key, prompt string, header ...string) response {
	t.Helper()
	r, err := e.sendTask(key, prompt, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sendTask creates a task from any goroutine.
func (e keysEnv) sendTask(key, prompt string, header ...string) (response, error) {
	req, _ := http.NewRequest("POST", e.base+"/api/v3/contents/generations/tasks",
		strings.NewReader(`{"model":"sim-video","content":[{"type":"text","text":"`+prompt+`"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return sendRequest(req)
}

func TestAdminAPIKeyLifecycle(t *testing.T) {
	e := startKeysGateway(t)
	// The key expires a year after today on the gateway's (real) clock.
	expires := time.Now().UTC().AddDate(1, 0, 0).Truncate(time.Second).Format(time.RFC3339)
	id, secret := e.newKey(t, `{"account":"acme","models":["sim-*"],"allow_ips":["127.0.0.1","::1"],"quota":100,"rate":{"requests":1000,"window":"1m"},"max_active_tasks":5,"expires":"`+expires+`"}`)
	if !strings.HasPrefix(secret, "mg-") || len(secret) < 40 || !strings.HasPrefix(id, "key_") {
		t.Fatalf("id %q secret %q", id, secret)
	}

	// The key works at once, without a reload.
	if got := modelIDs(t, e.base, secret); len(got) != 1 || got[0] != "sim-video" {
		t.Fatalf("models for the new key = %v", got)
	}

	r := e.admin(t, "GET", "/mediagw/keys", nil)
	var list []map[string]any
	decodeJSON(t, r.body, &list)
	if r.status != 200 || len(list) != 2 || strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), "hash") {
		t.Fatalf("list = %d %s", r.status, r.body)
	}
	for _, k := range list {
		if (k["id"] == "static-key") != (k["read_only"] == true) {
			t.Fatalf("read_only is wrong: %v", k)
		}
	}
	r = e.admin(t, "GET", "/mediagw/keys/"+id, nil)
	if m := r.json(t); r.status != 200 || m["account"] != "acme" || m["quota"] != float64(100) || m["key"] != nil {
		t.Fatalf("show = %d %s", r.status, r.body)
	}

	// Disabled through the API: refused on the next request.
	if r := e.admin(t, "PATCH", "/mediagw/keys/"+id, `{"disabled":true}`); r.status != 200 || r.json(t)["disabled"] != true {
		t.Fatalf("disable = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", e.base+"/v1/models", secret, nil); r.status != 403 {
		t.Fatalf("disabled key = %d %s", r.status, r.body)
	}
	e.admin(t, "PATCH", "/mediagw/keys/"+id, `{"disabled":false,"models":null,"quota":null}`)
	if got := modelIDs(t, e.base, secret); len(got) != 2 {
		t.Fatalf("after clearing models = %v", got)
	}

	// Accounts.
	if r := e.admin(t, "PATCH", "/mediagw/accounts/acme", `{"disabled":true}`); r.status != 200 || r.json(t)["disabled"] != true {
		t.Fatalf("disable account = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", e.base+"/v1/models", "mg-static-admin-test", nil); r.status != 403 || !strings.Contains(string(r.body), "account_disabled") {
		t.Fatalf("static key of a disabled account = %d %s", r.status, r.body)
	}
	e.admin(t, "PATCH", "/mediagw/accounts/acme", `{"disabled":false}`)
	if r := e.admin(t, "GET", "/mediagw/accounts", nil); r.status != 200 || !strings.Contains(string(r.body), `"acme"`) {
		t.Fatalf("accounts = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme", nil); r.status != 200 || r.json(t)["disabled"] != false {
		t.Fatalf("account = %d %s", r.status, r.body)
	}

	// Usage.
	created := e.createTask(t, secret, "count me")
	if created.status != 200 {
		t.Fatalf("create = %d %s", created.status, created.body)
	}
	// The task's price (cost sim-video 2: a request price of 2) is held at create and charged
	// when the task succeeds; quota_used is the money charged, as a decimal string.
	waitFor(t, "the task to succeed", func() bool {
		return call(t, "GET", e.base+"/api/v3/contents/generations/tasks/"+created.field("id"), secret, nil).field("status") == "succeeded"
	})
	// The task's finish settles its hold (quota_used) and then gives its slot back
	// (active_tasks): both are waited for.
	waitFor(t, "the key's usage to show the charge and the slot given back", func() bool {
		r = e.admin(t, "GET", "/mediagw/keys/"+id+"/usage", nil)
		return r.status == 200 && r.json(t)["quota_used"] == "2" && r.json(t)["active_tasks"] == float64(0)
	})
	// requests: the two before, the create and the polls (each a request)
	if u := r.json(t); u["tasks"] != float64(1) || u["requests"].(float64) < 4 || u["active_tasks"] != float64(0) {
		t.Fatalf("key usage = %d %s", r.status, r.body)
	}
	if u := e.admin(t, "GET", "/mediagw/accounts/acme/usage", nil).json(t); u["tasks"] != float64(1) {
		t.Fatalf("account usage = %v", u)
	}

	// Errors, never panics.
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/mediagw/keys/key_unknown", "", 404},
		{"PATCH", "/mediagw/keys/key_unknown", `{"disabled":true}`, 404},
		{"DELETE", "/mediagw/keys/key_unknown", "", 404},
		{"GET", "/mediagw/keys/key_unknown/usage", "", 404},
		{"POST", "/mediagw/keys", `{"account":`, 400},
		{"POST", "/mediagw/keys", `{"models":["x"]}`, 400},
		{"POST", "/mediagw/keys", `{"account":"a","colour":"blue"}`, 400},
		{"POST", "/mediagw/keys", `{"account":"a","allow_ips":["10.0.0.0/99"]}`, 400},
		{"POST", "/mediagw/keys", `{"account":"a","quota":-1}`, 400},
		{"POST", "/mediagw/keys", `{"account":"a","rate":{"requests":0,"window":"1m"}}`, 400},
		{"POST", "/mediagw/keys", `{"account":"a","expires":"soon"}`, 400},
		{"PATCH", "/mediagw/keys/" + id, `[]`, 400},
		{"PATCH", "/mediagw/keys/static-key", `{"disabled":true}`, 409},
		{"DELETE", "/mediagw/keys/static-key", "", 409},
		{"PATCH", "/mediagw/accounts/acme", `{"disabled":"yes"}`, 400},
		{"PUT", "/mediagw/keys", "", 405},
		{"GET", "/mediagw/nothing", "", 404},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		r := e.admin(t, tc.method, tc.path, body)
		if r.status != tc.status || r.json(t)["error"] == "" {
			t.Errorf("%s %s %s = %d %s, want %d", tc.method, tc.path, tc.body, r.status, r.body, tc.status)
		}
	}

	// Revoked: refused at once.
	if r := e.admin(t, "DELETE", "/mediagw/keys/"+id, nil); r.status != 200 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", e.base+"/v1/models", secret, nil); r.status != 401 {
		t.Fatalf("revoked key = %d", r.status)
	}
}

func TestCLI(t *testing.T) {
	e := startKeysGateway(t)
	bin := caddyBinary(t)
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"mediagw"}, args...), "--address", e.g.admin)...)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("caddy mediagw %s: err %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run(true, "key", "create", "--account", "cli", "--models", "sim-*", "--quota", "10", "--rate", "100/1m", "--max-active-tasks", "3")
	var created struct{ ID, Key string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Key, "mg-") {
		t.Fatalf("create printed %q", out)
	}
	for _, args := range [][]string{{"key", "list"}, {"key", "show", created.ID}, {"key", "usage", created.ID}, {"account", "show", "cli"}, {"account", "usage", "cli"}} {
		if out := run(true, args...); strings.Contains(out, created.Key) || !strings.Contains(out, "{") {
			t.Fatalf("%v printed the secret or nothing: %s", args, out)
		}
	}
	// The lists read every page of the admin API's paged lists into one array.
	var listed []struct{ ID, Account, Name string }
	if err := json.Unmarshal([]byte(run(true, "key", "list", "--account", "cli")), &listed); err != nil || len(listed) != 1 || listed[0].ID != created.ID {
		t.Fatalf("key list --account cli = %+v, %v", listed, err)
	}
	if err := json.Unmarshal([]byte(run(true, "account", "list")), &listed); err != nil || !slices.ContainsFunc(listed, func(a struct{ ID, Account, Name string }) bool { return a.Name == "cli" }) {
		t.Fatalf("account list = %+v, %v", listed, err)
	}
	run(true, "key", "disable", created.ID)
	if r := call(t, "GET", e.base+"/v1/models", created.Key, nil); r.status != 403 {
		t.Fatalf("after CLI disable = %d", r.status)
	}
	run(true, "key", "enable", created.ID)
	run(true, "account", "disable", "cli")
	if r := call(t, "GET", e.base+"/v1/models", created.Key, nil); r.status != 403 {
		t.Fatalf("after CLI account disable = %d", r.status)
	}
	run(true, "account", "enable", "cli")
	if r := call(t, "GET", e.base+"/v1/models", created.Key, nil); r.status != 200 {
		t.Fatalf("after enabling = %d", r.status)
	}
	run(true, "key", "revoke", created.ID)
	if r := call(t, "GET", e.base+"/v1/models", created.Key, nil); r.status != 401 {
		t.Fatalf("after CLI revoke = %d", r.status)
	}
	if out := run(false, "key", "show", "key_nope"); !strings.Contains(out, "404") || strings.Contains(out, "panic") {
		t.Fatalf("unknown key: %s", out)
	}
	run(false, "key", "create") // no --account
	budgeted := run(true, "key", "create", "--account", "cli", "--budget", "25.50/month")
	if !strings.Contains(budgeted, `"amount": "25.5"`) || !strings.Contains(budgeted, `"period": "month"`) {
		t.Fatalf("key create --budget printed %s", budgeted)
	}
	if out := run(false, "key", "create", "--account", "cli", "--budget", "5/week"); !strings.Contains(out, "--budget") {
		t.Fatalf("--budget 5/week: %s", out)
	}
	// An account named with a slash is managed like any other.
	slashed := run(true, "key", "create", "--account", "cli/eu")
	if err := json.Unmarshal([]byte(slashed), &created); err != nil {
		t.Fatalf("create printed %q", slashed)
	}
	if out := run(true, "account", "show", "cli/eu"); !strings.Contains(out, `"cli/eu"`) {
		t.Fatalf("account show cli/eu printed %s", out)
	}
	run(true, "account", "disable", "cli/eu")
	if r := call(t, "GET", e.base+"/v1/models", created.Key, nil); r.status != 403 {
		t.Fatalf("after CLI disable of cli/eu = %d", r.status)
	}
}

func TestQuotaIsExactUnderConcurrency(t *testing.T) {
	e := startKeysGateway(t)
	// sim-video costs 2 (cost sim-video 2, the price {request 2}) and quota 100 is a budget of
	// 100: 50 tasks.
	id, secret := e.newKey(t, `{"account":"quota","quota":100}`)

	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				r, err := e.sendTask(secret, "one of many")
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
				if r.status == 402 && !strings.Contains(string(r.body), `"code":"insufficient_quota"`) {
					t.Errorf("402 body = %s", r.body)
				}
			}
		}()
	}
	wg.Wait()
	if statuses[200] != 50 || statuses[402] != 150 {
		t.Fatalf("200 concurrent creates against a quota of 50 tasks: %v", statuses)
	}
	if u := e.admin(t, "GET", "/mediagw/keys/"+id+"/usage", nil).json(t); u["quota_used"] != "0" || u["quota"] != float64(100) {
		t.Fatalf("usage = %v; want nothing charged yet (the tasks run)", u)
	}
	if b := e.admin(t, "GET", "/mediagw/accounts/quota/balance", nil); b.field("held") != "100" || b.field("balance") != "-100" {
		t.Fatalf("balance = %s; want the 50 tasks' 100 held", b.body)
	}
	// The list agrees: exactly 50 tasks exist.
	if r := call(t, "GET", e.base+"/api/v3/contents/generations/tasks?page_size=500", secret, nil); r.json(t)["total"] != float64(50) {
		t.Fatalf("tasks listed = %v", r.json(t)["total"])
	}
}

// TestDynamicKeyBudget: a key created through the admin API with a day budget of 4 (sim-video
// costs 2 a task) has exactly two tasks accepted, the third refused 402 insufficient_quota
// naming the key's budget; the key shows its budget, and clearing it lifts the limit. The three
// tasks are created within one UTC day (withinOneUTCDay): the budget is that day's.
func TestDynamicKeyBudget(t *testing.T) {
	e := startKeysGateway(t)
	var (
		id, secret string
		r          response
		err        error
	)
	withinOneUTCDay(t, func() {
		id, secret = e.newKey(t, `{"account":"budgeted","budget":{"amount":"4","period":"day"}}`)
		for i := range 2 {
			if r, err := e.sendTask(secret, "within the budget"); err != nil || r.status != 200 {
				t.Fatalf("task %d within the budget: %v %v", i+1, r, err)
			}
		}
		r, err = e.sendTask(secret, "past the budget")
	})
	if k := e.admin(t, "GET", "/mediagw/keys/"+id, nil).json(t); fmt.Sprint(k["budget"]) != "map[amount:4 period:day]" {
		t.Fatalf("key = %v", k)
	}
	if err != nil || r.status != 402 || !strings.Contains(string(r.body), `"code":"insufficient_quota"`) || !strings.Contains(string(r.body), "budget") {
		t.Fatalf("task past the budget: %v %v", r, err)
	}
	if r := e.admin(t, "POST", "/mediagw/keys", `{"account":"both","quota":5,"budget":{"amount":"5"}}`); r.status != 400 {
		t.Fatalf("a key with a quota and a budget = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "PATCH", "/mediagw/keys/"+id, `{"budget":null}`); r.status != 200 {
		t.Fatalf("clearing the budget = %d %s", r.status, r.body)
	}
	waitFor(t, "the cleared budget", func() bool {
		r, err := e.sendTask(secret, "no budget")
		return err == nil && r.status == 200
	})
}

func TestQuotaRefundedWhenTheUpstreamFails(t *testing.T) {
	e := startKeysGateway(t)
	id, secret := e.newKey(t, `{"account":"refund","quota":5}`)
	r := call(t, "POST", e.base+"/api/v3/contents/generations/tasks", secret, `{"model":"broken-video","content":[{"type":"text","text":"x"}]}`)
	if r.status != 502 {
		t.Fatalf("create on a dead upstream = %d %s", r.status, r.body)
	}
	if u := e.admin(t, "GET", "/mediagw/keys/"+id+"/usage", nil).json(t); u["quota_used"] != "0" {
		t.Fatalf("quota used after an upstream failure = %v", u["quota_used"])
	}
}

func TestRateAndActiveTaskLimits(t *testing.T) {
	e := startKeysGateway(t)
	// A window of a minute: the five requests below fall in it however slow a loaded machine is
	// (with 2 s, the fourth could come after the first had left the window).
	_, limited := e.newKey(t, `{"account":"rl","rate":{"requests":3,"window":"1m"}}`)
	for i := range 3 {
		if r := call(t, "GET", e.base+"/v1/models", limited, nil); r.status != 200 {
			t.Fatalf("request %d = %d", i+1, r.status)
		}
	}
	r := call(t, "GET", e.base+"/v1/models", limited, nil)
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "rate_limit_exceeded") {
		t.Fatalf("4th request = %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	// On the task API the refusal has the task shape.
	r = call(t, "GET", e.base+"/api/v3/contents/generations/tasks", limited, nil)
	if r.status != 429 || r.json(t)["code"] != "rate_limit_exceeded" {
		t.Fatalf("task API rate refusal = %d %s", r.status, r.body)
	}

	_, busy := e.newKey(t, `{"account":"busy","max_active_tasks":2}`)
	var ids []string
	for range 2 {
		r := e.createTask(t, busy, "occupy a slot")
		if r.status != 200 {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		ids = append(ids, r.json(t)["id"].(string))
	}
	activeRejections := func() float64 {
		return value(scrape(t, e.g), "mediagw_rejections_total", map[string]string{"reason": "active_tasks"})
	}
	before := activeRejections()
	r = e.createTask(t, busy, "one too many")
	if r.status != 429 || r.json(t)["code"] != "too_many_active_tasks" || r.header.Get("Retry-After") == "" {
		t.Fatalf("third active task = %d %s", r.status, r.body)
	}
	// The refusal comes after the create was charged (and the charge undone); it still counts as
	// one, for dashboards and alerts on refusals by reason.
	if got := activeRejections() - before; got != 1 {
		t.Fatalf("mediagw_rejections_total{reason=\"active_tasks\"} grew by %v, want 1", got)
	}
	// Once a task is finished, its slot is free: it is polled until it shows succeeded.
	deadline := time.Now().Add(60 * time.Second) // a generous wait: it ends as soon as the condition holds
	for time.Now().Before(deadline) {
		if call(t, "GET", e.base+"/api/v3/contents/generations/tasks/"+ids[0], busy, nil).json(t)["status"] == "succeeded" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Whoever finished the task (the watcher, or the query above) gives its slot back just after
	// the record shows succeeded: a create is refused 429 until then (and charged nothing).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := e.createTask(t, busy, "now there is room")
		if r.status == 200 {
			break
		}
		if r.status != 429 || time.Now().After(deadline) {
			t.Fatalf("after a task finished = %d %s", r.status, r.body)
		}
	}
}

func TestIdempotentCreate(t *testing.T) {
	e := startKeysGateway(t)
	_, secret := e.newKey(t, `{"account":"idem"}`)
	var wg sync.WaitGroup
	results := make([]response, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if results[i], err = e.sendTask(secret, "exactly once", "Idempotency-Key", "order-42"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range results {
		switch r.status {
		case 200:
			ids[r.json(t)["id"].(string)] = true
		case 409:
			if r.json(t)["code"] != "idempotency_in_progress" {
				t.Fatalf("409 body = %s", r.body)
			}
		default:
			t.Fatalf("parallel idempotent create = %d %s", r.status, r.body)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("parallel creates with one key produced ids %v", ids)
	}
	list := call(t, "GET", e.base+"/api/v3/contents/generations/tasks", secret, nil).json(t)
	if list["total"] != float64(1) {
		t.Fatalf("the upstream was reached %v times", list["total"])
	}
	again := e.createTask(t, secret, "exactly once", "Idempotency-Key", "order-42")
	if again.status != 200 || !ids[again.json(t)["id"].(string)] || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry = %d %s", again.status, again.body)
	}
	if r := e.createTask(t, secret, "something else", "Idempotency-Key", "order-42"); r.status != 422 {
		t.Fatalf("same key, other body = %d %s", r.status, r.body)
	}
	// Another account may use the same key for its own request.
	_, other := e.newKey(t, `{"account":"idem-other"}`)
	if r := e.createTask(t, other, "exactly once", "Idempotency-Key", "order-42"); r.status != 200 || ids[r.json(t)["id"].(string)] {
		t.Fatalf("another account's identical key = %d %s", r.status, r.body)
	}
	// A 429 the gateway gave on its own (too many active tasks) is not kept: once a slot is free,
	// a retry with the same key creates the task instead of replaying the 429.
	_, limited := e.newKey(t, `{"account":"idem-limited","max_active_tasks":1}`)
	first := e.createTask(t, limited, "holds the slot")
	if first.status != 200 {
		t.Fatalf("first create = %d %s", first.status, first.body)
	}
	if r := e.createTask(t, limited, "waits", "Idempotency-Key", "retry-after-429"); r.status != 429 {
		t.Fatalf("create past max_active_tasks = %d %s", r.status, r.body)
	}
	firstID := first.json(t)["id"].(string)
	waitFor(t, "the first task to finish", func() bool {
		r := call(t, "GET", e.base+"/api/v3/contents/generations/tasks/"+firstID, limited, nil)
		return r.status == 200 && r.json(t)["status"] == "succeeded"
	})
	// Whoever finished the task gives its slot back just after the record shows succeeded: until
	// then the retry is refused 429 again (not kept either).
	r := e.createTask(t, limited, "waits", "Idempotency-Key", "retry-after-429")
	for deadline := time.Now().Add(30 * time.Second); r.status == 429 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		r = e.createTask(t, limited, "waits", "Idempotency-Key", "retry-after-429")
	}
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || r.json(t)["id"] == nil {
		t.Fatalf("retry after the 429 = %d %s (replayed %q)", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
}

// An account name with a control character (a NUL ends the stores' index keys; a newline would
// split a log line or a CSV row) is refused by the admin API, and printable markup is not.
func TestAccountNamesAreText(t *testing.T) {
	e := startKeysGateway(t)
	for _, name := range []string{"a\u0000b", "line\nbreak", "tab\there", " "} {
		body, _ := json.Marshal(map[string]string{"account": name})
		if r := e.admin(t, "POST", "/mediagw/keys", string(body)); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "account") {
			t.Fatalf("account %q = %d %s", name, r.status, r.body)
		}
	}
	if r := e.admin(t, "POST", "/mediagw/keys", `{"account":"<b>team</b> & co"}`); r.status != http.StatusCreated {
		t.Fatalf("a printable account name = %d %s", r.status, r.body)
	}
	// A PATCH, which makes the record of an account that has no key yet, holds its name to the
	// same rule: no record is made for a name no key could have.
	for _, escaped := range []string{"a%00b", "line%0Abreak", "%20", "a%FFb", strings.Repeat("x", 129)} {
		if r := e.admin(t, "PATCH", "/mediagw/accounts/"+escaped, `{"disabled":true}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "account") {
			t.Fatalf("PATCH account %q = %d %s", escaped, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts", nil); strings.Contains(string(r.body), `"disabled":true`) {
		t.Fatalf("a refused PATCH made an account record: %s", r.body)
	}
	// A name that cannot be one segment of an admin path is refused: Caddy's admin endpoint
	// cleans "." and ".." away before the route is read, so the account could never be shown,
	// disabled or credited.
	for _, name := range []string{".", ".."} {
		body, _ := json.Marshal(map[string]string{"account": name})
		if r := e.admin(t, "POST", "/mediagw/keys", string(body)); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "account") {
			t.Fatalf("account %q = %d %s", name, r.status, r.body)
		}
	}
	// A name with a slash is one path segment written %2F, as the CLI and the console write it:
	// the account can be shown, disabled and credited like any other.
	for _, name := range []string{"acme/eu", "a%2Fb", "../keys"} {
		body, _ := json.Marshal(map[string]string{"account": name})
		r := e.admin(t, "POST", "/mediagw/keys", string(body))
		if r.status != http.StatusCreated {
			t.Fatalf("account %q = %d %s", name, r.status, r.body)
		}
		path := "/mediagw/accounts/" + url.PathEscape(name)
		if r := e.admin(t, "GET", path, nil); r.status != 200 || r.field("name") != name {
			t.Fatalf("GET %s = %d %s", path, r.status, r.body)
		}
		if r := e.admin(t, "PATCH", path, `{"disabled":true}`); r.status != 200 || r.field("name") != name || r.json(t)["disabled"] != true {
			t.Fatalf("PATCH %s = %d %s", path, r.status, r.body)
		}
		if r := e.admin(t, "GET", path+"/usage", nil); r.status != 200 {
			t.Fatalf("GET %s/usage = %d %s", path, r.status, r.body)
		}
		if r := e.admin(t, "GET", path+"/balance", nil); r.status != 200 || r.field("account") != name {
			t.Fatalf("GET %s/balance = %d %s", path, r.status, r.body)
		}
		if r := e.admin(t, "GET", "/mediagw/keys?account="+url.QueryEscape(name), nil); r.status != 200 || !strings.Contains(string(r.body), `"disabled":false`) {
			t.Fatalf("keys of %q = %d %s", name, r.status, r.body)
		}
	}
}

// An account whose last key is revoked (or moved to another account) is still listed, and so
// still shown, with its usage, balance and ledger, and can still be credited or refunded: the
// money on its balance does not become unreachable through the admin API.
func TestAccountOutlivesItsKeys(t *testing.T) {
	e := startKeysGateway(t)
	admin := "http://" + e.g.admin
	revoked, _ := e.newKey(t, `{"account":"former"}`)
	creditAccount(t, admin, "former", "10")
	if r := e.admin(t, "DELETE", "/mediagw/keys/"+revoked, nil); r.status != 200 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	moved, _ := e.newKey(t, `{"account":"left-behind"}`)
	if r := e.admin(t, "PATCH", "/mediagw/keys/"+moved, `{"account":"new-home"}`); r.status != 200 {
		t.Fatalf("move = %d %s", r.status, r.body)
	}
	for _, name := range []string{"former", "left-behind"} {
		if r := e.admin(t, "GET", "/mediagw/accounts", nil); !strings.Contains(string(r.body), `"name":"`+name+`"`) {
			t.Fatalf("accounts list without %s: %s", name, r.body)
		}
		for _, suffix := range []string{"", "/usage", "/balance", "/ledger"} {
			if r := e.admin(t, "GET", "/mediagw/accounts/"+name+suffix, nil); r.status != 200 {
				t.Errorf("GET /mediagw/accounts/%s%s = %d %s", name, suffix, r.status, r.body)
			}
		}
	}
	if b := e.admin(t, "GET", "/mediagw/accounts/former/balance", nil); b.field("balance") != "10" {
		t.Fatalf("balance of former = %d %s", b.status, b.body)
	}
	req, _ := http.NewRequest("POST", admin+"/mediagw/accounts/former/credit", strings.NewReader(`{"amount":"-10","adjust":true,"note":"refund on closing"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "refund-former")
	if r := do(t, req); r.status != 200 {
		t.Fatalf("refund of an account without keys = %d %s", r.status, r.body)
	}
	// A name that never had a key, a record or a configuration entry is still unknown.
	if r := e.admin(t, "GET", "/mediagw/accounts/formerly", nil); r.status != 404 {
		t.Fatalf("unknown account = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/forme", nil); r.status != 404 {
		t.Fatalf("unknown account = %d %s", r.status, r.body)
	}
}
