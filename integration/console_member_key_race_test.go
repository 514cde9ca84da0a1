package integration

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mediagw/mediagw/internal/testredis"
)

// A member's account holds at most member_keys max keys created in the console, even when the
// member sends the create form many times at once from one session (a double click, a script
// with the session's cookie and token): the account's key lease must keep a second create of
// the same session out while the first counts and creates, as it keeps out another session's.
// (Its owner was the session: a second create of the session took the lease it already held.)
// On Redis, where each step is a round trip, a member so makes creates_per_hour keys; Badger's
// in-process steps leave a narrower window.
func TestConsoleMemberKeyMaxHoldsUnderConcurrentCreates(t *testing.T) {
	redis := testredis.Start(t, testredis.Options{})
	for _, store := range []string{"storage badger {{data}}", "storage redis " + redis.URL()} {
		t.Run(strings.Fields(store)[1], func(t *testing.T) { concurrentMemberCreates(t, store) })
	}
}

func concurrentMemberCreates(t *testing.T, store string) {
	cfg := strings.Replace(consoleCaddyfile, "storage badger {{data}}", store, 1)
	if cfg == consoleCaddyfile && !strings.Contains(store, "badger") {
		t.Fatal("the console Caddyfile changed shape")
	}
	e := startConsoleWith(t, cfg) // member_keys max 2 for acme's members
	// One key of acme's already, made by the operator: one more is the member's last.
	if r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"acme"}`); r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	alice := e.login(t, "alice")
	const creates = 16
	// Each create is its own form (its own page's one-time token), as a script that reads the
	// keys page before each would send: the lease, not the token, must keep them apart.
	forms := make([]string, creates)
	for i := range forms {
		alice.do(http.MethodGet, "/keys", nil)
		forms[i] = url.Values{"csrf": {alice.csrf}, "key_token": {alice.keyToken}}.Encode()
	}
	var wg sync.WaitGroup
	statuses := make([]int, creates)
	for i := range creates {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, e.console+"/keys", strings.NewReader(forms[i]))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", alice.cookie)
			resp, err := noRedirects.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	if created := e.madeKeys(t, "acme"); created > 2 {
		t.Fatalf("%d concurrent creates of one member session made %d keys in acme, past member_keys max 2 (statuses %v)", creates, created, statuses)
	}
}
