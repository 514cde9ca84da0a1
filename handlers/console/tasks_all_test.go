package console

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// An operator's search without an account pages every account's tasks newest first, filtered by
// status and model; a member reaches none of another account's tasks through the search's
// account, its cursor, the id box or the task's URL.
func TestTaskSearchAcrossAccounts(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	day := time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	for i := range 130 {
		acct := []string{"acme", "beta"}[i%2]
		task := storage.Task{ID: fmt.Sprintf("cgt-%03d", i), Kind: storage.KindVideo, Account: acct, Model: fmt.Sprint("m", i%3),
			Status: "queued", CreatedAt: day.Add(time.Duration(i) * time.Minute).Unix(), ExpiresAt: c.clock.Add(time.Hour).Unix()}
		if _, err := c.h.Store.CreateTask(t.Context(), task); err != nil {
			t.Fatal(err)
		}
	}
	row := regexp.MustCompile(`<code>(cgt-[^<]+)</code></a></td><td><a href="/accounts/[^"]+">([^<]+)</a>`)
	older := regexp.MustCompile(`href="(/tasks\?[^"]+)">Older`)
	admin := c.login("admin")
	var seen []string
	accounts := map[string]int{}
	for target := "/tasks"; target != ""; {
		resp, page := c.request(http.MethodGet, target, admin, nil, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Tasks of every account") {
			t.Fatalf("%s = %d", target, resp.StatusCode)
		}
		for _, m := range row.FindAllStringSubmatch(page, -1) {
			seen = append(seen, m[1])
			accounts[m[2]]++
		}
		target = ""
		if m := older.FindStringSubmatch(page); m != nil && len(seen) < 500 {
			target = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 130 || seen[0] != "cgt-129" || seen[129] != "cgt-000" || accounts["acme"] != 65 || accounts["beta"] != 65 {
		t.Fatalf("every account's tasks: %d, from %v, by account %v", len(seen), seen[:min(3, len(seen))], accounts)
	}
	_, page := c.request(http.MethodGet, "/tasks?model=m2&status=queued&from=2026-02-20&to=2026-02-20", admin, nil, nil)
	if got := len(row.FindAllStringSubmatch(page, -1)); got != 43 {
		t.Fatalf("model m2 across accounts: %d tasks, want 43", got)
	}

	alice := c.login("alice")
	ids := regexp.MustCompile(`<code>(cgt-[^<]+)</code>`)
	// beta's newest task is cgt-129: its cursor, and beta named as the account, show acme's only.
	for _, target := range []string{"/tasks", "/tasks?account=beta", "/tasks?account=", "/tasks?before=" + fmt.Sprintf("%020d/cgt-129", day.Add(129*time.Minute).Unix())} {
		resp, page := c.request(http.MethodGet, target, alice, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's %s = %d", target, resp.StatusCode)
		}
		found := ids.FindAllStringSubmatch(page, -1)
		if len(found) == 0 {
			t.Fatalf("alice's %s shows no task", target)
		}
		for _, m := range found {
			var n int
			if _, err := fmt.Sscanf(m[1], "cgt-%d", &n); err != nil || n%2 != 0 {
				t.Fatalf("alice's %s shows %s, not acme's", target, m[1])
			}
		}
	}
	// The id box goes to the task's page, which is acme's or nothing.
	resp, _ := c.request(http.MethodGet, "/tasks?id=cgt-129", alice, nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tasks/cgt-129" {
		t.Fatalf("the id box = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, target := range []string{"/tasks/cgt-129", "/tasks/cgt-001", "/tasks/cgt-nope"} {
		if resp, page := c.request(http.MethodGet, target, alice, nil, nil); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "beta") {
			t.Fatalf("alice's %s = %d", target, resp.StatusCode)
		}
	}
	if resp, _ := c.request(http.MethodGet, "/tasks/cgt-128", alice, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's own task = %d", resp.StatusCode)
	}
}
