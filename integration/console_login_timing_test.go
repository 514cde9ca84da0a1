package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// A wrong password for a member takes as long to refuse as any name that is no user, whatever
// the cost of that member's hash: the console's users are made with two tools
// (`caddy mediagw hash-password`, cost 12, and `caddy hash-password`, cost 14), and a login
// refused much faster for one name than for names that are no user tells an attacker that this
// member exists, and which names to guess passwords for.
func TestConsoleWrongPasswordTimeTellsNoMember(t *testing.T) {
	// ops has a costlier hash than alice (bcrypt's time doubles with each step of cost), as a
	// hash made with the other tool would be.
	opsHash, err := bcrypt.GenerateFromPassword([]byte("ops-password"), 10)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(consoleCaddyfile, "\t\tuser admin {{admin_hash}}\n", "\t\tuser admin {{admin_hash}}\n\t\tuser ops {{ops_hash}}\n", 1)
	if cfg == consoleCaddyfile {
		t.Fatal("the console Caddyfile changed shape")
	}
	e := startConsoleVars(t, cfg, map[string]string{"ops_hash": string(opsHash)})

	// Three wrong passwords for alice and three names that are no user: six attempts, within the
	// address's ten.
	refusal := func(user string) time.Duration {
		t.Helper()
		b := &consoleBrowser{t: t, base: e.console}
		if status, _, _ := b.do(http.MethodGet, "/login", nil); status != http.StatusOK {
			t.Fatalf("GET /login = %d", status)
		}
		form := url.Values{"username": {user}, "password": {"not-the-password"}, "csrf": {b.csrf}}
		start := time.Now()
		status, _, _ := b.do(http.MethodPost, "/login", form)
		took := time.Since(start)
		if status != http.StatusUnauthorized {
			t.Fatalf("login of %s with a wrong password = %d", user, status)
		}
		return took
	}
	var member, nobody []time.Duration
	for i := range 3 {
		member = append(member, refusal("alice"))
		nobody = append(nobody, refusal(fmt.Sprint("nobody-", i)))
	}
	slices.Sort(member)
	slices.Sort(nobody)
	// Load only slows a refusal down: alice's fastest must not be far faster than the typical
	// refusal of a name that is no user (cost 4 against cost 10 is 64 times as fast).
	if member[0] < nobody[1]/4 {
		t.Fatalf("a wrong password for alice is refused in %v, a name that is no user in %v: the time tells that alice exists", member, nobody)
	}
}
