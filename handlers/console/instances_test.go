package console

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// Two gateway instances on one Redis share sessions: a login on one is a session on the other,
// a logout on either ends it on both, and a CSRF token of one is good on the other.
func TestSessionsAcrossInstancesOnRedis(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	open := func() *testConsole {
		store, err := storage.OpenRedis(t.Context(), storage.RedisOptions{URL: srv.URL(), KeyPrefix: "console-test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		})
		return newTestConsoleOn(t, store, bcryptTestCost)
	}
	a, b := open(), open()
	b.h.Users = a.h.Users // one configuration
	cookie := a.login("alice")
	if !b.signedIn(cookie) {
		t.Fatal("a login on one instance is no session on the other")
	}
	csrf := a.sessionOf(cookie).csrf()
	resp, _ := b.request(http.MethodPost, "/logout", cookie, url.Values{"csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout on the other instance = %d", resp.StatusCode)
	}
	if a.signedIn(cookie) || b.signedIn(cookie) {
		t.Fatal("a session outlived its logout on another instance")
	}
}
