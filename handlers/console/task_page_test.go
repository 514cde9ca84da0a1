package console

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// seedTask stores a finished video task of account with a settled hold and two callback
// attempts, created at created; between the hold and its settlement the account gets between
// credits (more than one page of the task page's ledger search).
func seedTask(t *testing.T, c *testConsole, id, account string, created time.Time, callbackURL string, between int) {
	t.Helper()
	ctx := context.Background()
	hold, _, err := c.h.Store.Hold(ctx, storage.Hold{ID: "hold-" + id, Account: account, KeyID: "k", Model: "sim-video",
		Amount: 2_500_000, Deadline: created.Add(time.Hour)}, created)
	if err != nil {
		t.Fatal(err)
	}
	task := storage.Task{ID: id, Kind: storage.KindVideo, Account: account, KeyID: "k", Provider: "sim", Upstream: "main",
		UpstreamAddress: "http://upstream.internal/api/v3", Model: "sim-video", CreatedAt: created.Unix(), UpdatedAt: created.Unix() + 30,
		Status: "succeeded", Result: []byte(`{"id":"` + id + `","status":"succeeded","content":{"video_url":"https://cdn.example/v.mp4"}}`),
		ExpiresAt: created.Add(24 * time.Hour).Unix(), Finished: true, FinishedAt: created.Unix() + 30, HoldID: hold.ID, HoldAmount: hold.Amount, CallbackURL: callbackURL}
	if _, err := c.h.Store.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := c.h.Store.BindHold(ctx, hold.ID, id); err != nil {
		t.Fatal(err)
	}
	for i := range between {
		if _, err := c.h.Store.Credit(ctx, storage.Credit{Account: account, Amount: 1, IdempotencyKey: fmt.Sprint(id, i)}, created.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.h.Store.Settle(ctx, hold.ID, 1_750_000, created.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	for i, d := range []storage.Delivery{{Outcome: "retry", HTTPStatus: 503}, {Outcome: "delivered", HTTPStatus: 204}} {
		d.TaskID, d.EventID, d.Status, d.Attempt = id, "msg_"+id, "succeeded", i+1
		d.At = created.Add(time.Duration(31+i*10) * time.Second).UnixNano()
		if err := c.h.Store.RecordDelivery(ctx, d, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTaskPageShowsItsLife: the task page shows the upstream, a timeline in order, the hold and
// its ledger entries (charged 1.75 of 2.5 held), the callback attempts with their outcomes, and
// the video; a callback URL with markup is shown as text; a member of another account gets 404.
func TestTaskPageShowsItsLife(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	created := c.clock.Add(-time.Hour)
	seedTask(t, c, "cgt-life", "acme", created, `https://hooks.example/cb?x=<script>alert(1)</script>`, ledgerNearPage+100)
	seedTask(t, c, "cgt-beta", "beta", created, "", 0)

	resp, page := c.request(http.MethodGet, "/tasks/cgt-life", c.login("admin"), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("task page = %d", resp.StatusCode)
	}
	for _, want := range []string{"sim / main", "http://upstream.internal/api/v3", "Held 2.5", "settled", "<td>1.75</td>",
		"HTTP 503", "HTTP 204", "delivered", `src="https://cdn.example/v.mp4"`, "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the task page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("the callback URL's markup is live")
	}
	order := []string{"created upstream", "hold of 2.5 taken", "settled: charged 1.75", "callback for succeeded: retry", "callback for succeeded: delivered"}
	last := -1
	for _, step := range order {
		i := strings.Index(page, step)
		if i < 0 || i < last {
			t.Fatalf("the timeline lacks %q or has it out of order (at %d, after %d)", step, i, last)
		}
		last = i
	}

	alice := c.login("alice")
	if resp, page := c.request(http.MethodGet, "/tasks/cgt-beta", alice, nil, nil); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "cgt-beta") && strings.Contains(page, "Held") {
		t.Fatalf("beta's task as alice = %d", resp.StatusCode)
	}
	if _, page := c.request(http.MethodGet, "/tasks/cgt-life", alice, nil, nil); strings.Contains(page, "upstream.internal") || !strings.Contains(page, "sim / main") {
		t.Error("a member sees the upstream's address, or not its name")
	}
}

// TestTaskSearchPages: 120 tasks of acme are read 50 a page, newest first, through the Older
// link; a status filter and a day range narrow the search; a member's search is their account's
// whatever the query names; a broken cursor is a 400.
func TestTaskSearchPages(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	ctx := context.Background()
	day := time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	for i := range 120 {
		task := storage.Task{ID: fmt.Sprintf("cgt-%03d", i), Kind: storage.KindVideo, Account: "acme", Model: "m", Status: "queued",
			CreatedAt: day.Add(time.Duration(i) * time.Hour).Unix(), ExpiresAt: c.clock.Add(time.Hour).Unix()}
		if i%10 == 0 {
			task.Status = "failed"
		}
		if _, err := c.h.Store.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.h.Store.CreateTask(ctx, storage.Task{ID: "cgt-beta", Kind: storage.KindVideo, Account: "beta", Status: "queued",
		CreatedAt: day.Unix(), ExpiresAt: c.clock.Add(time.Hour).Unix()}); err != nil {
		t.Fatal(err)
	}
	admin := c.login("admin")
	ids := regexp.MustCompile(`<code>(cgt-[^<]+)</code>`)
	older := regexp.MustCompile(`href="(/tasks\?[^"]+)">Older`)
	target := "/tasks?account=acme"
	var seen []string
	for range 5 {
		resp, page := c.request(http.MethodGet, target, admin, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", target, resp.StatusCode)
		}
		for _, m := range ids.FindAllStringSubmatch(page, -1) {
			seen = append(seen, m[1])
		}
		m := older.FindStringSubmatch(page)
		if m == nil {
			break
		}
		target = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	if len(seen) != 120 || seen[0] != "cgt-119" || seen[119] != "cgt-000" {
		t.Fatalf("the pages show %d tasks, from %v", len(seen), seen[:min(3, len(seen))])
	}
	// Created hourly from 20 February: tasks 24 to 71 are of the 21st and 22nd; every tenth failed.
	_, page := c.request(http.MethodGet, "/tasks?account=acme&status=failed&from=2026-02-21&to=2026-02-22", admin, nil, nil)
	if got := fmt.Sprint(ids.FindAllStringSubmatch(page, -1)); got != "[[<code>cgt-070</code> cgt-070] [<code>cgt-060</code> cgt-060] [<code>cgt-050</code> cgt-050] [<code>cgt-040</code> cgt-040] [<code>cgt-030</code> cgt-030]]" {
		t.Fatalf("failed tasks of 21 and 22 February: %s", got)
	}
	_, page = c.request(http.MethodGet, "/tasks?account=beta", c.login("alice"), nil, nil)
	if strings.Contains(page, "cgt-beta") || !strings.Contains(page, "cgt-119") {
		t.Fatal("alice's search for account beta shows beta's task, or not acme's")
	}
	if resp, _ := c.request(http.MethodGet, "/tasks?account=acme&before=garbage", admin, nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a broken cursor = %d", resp.StatusCode)
	}
}

// The task's facts state its cost as the ledger has it, whatever the state of its hold.
func TestCostText(t *testing.T) {
	hold := func(state string) *storage.Hold { return &storage.Hold{State: state} }
	for _, c := range []struct {
		d    taskData
		want string
	}{
		{taskData{Hold: hold(storage.HoldSettled), Entries: []keyadmin.EntryView{{Kind: storage.EntryHold, Amount: "-2"}, {Kind: storage.EntrySettle, Charged: "1.75"}}}, "1.75 charged"},
		{taskData{Hold: hold(storage.HoldOpen), HoldAmount: "2"}, "2 held; charged when the task ends"},
		{taskData{Hold: hold(storage.HoldReleased), Entries: []keyadmin.EntryView{{Kind: storage.EntryRelease}}}, "nothing: the hold was released"},
		{taskData{Hold: hold(storage.HoldSettled), EntriesCut: true}, "settled; the entry is in the account's ledger (see below)"},
		{taskData{Task: storage.Task{Cost: 12}}, "12 (metered before billing)"},
		{taskData{}, "nothing: no money was held"},
	} {
		if got := costText(c.d); got != c.want {
			t.Errorf("costText(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
}
