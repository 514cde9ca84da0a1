package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// Without MemberKeys a member creates no key and is offered no form; with it, every key they
// create carries its limits and the account holds at most Max of them.
func TestMemberKeyLimits(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	alice := c.login("alice")
	csrf := c.sessionOf(alice).csrf()
	if _, page := c.request(http.MethodGet, "/keys", alice, nil, nil); strings.Contains(page, `action="/keys"`) {
		t.Fatal("a member is offered the create form without MemberKeys")
	}
	if resp, _ := c.request(http.MethodPost, "/keys", alice, url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("create without MemberKeys = %d", resp.StatusCode)
	}

	quota := int64(500)
	c.h.MemberKeys = &MemberKeys{Max: 1, Quota: &quota}
	form := url.Values{"csrf": {csrf}, "account": {"beta"}, "quota": {"0"}}
	form.Set(keyFormField, newKeyFormToken())
	if resp, page := c.request(http.MethodPost, "/keys", alice, form, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, page)
	}
	page, err := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	keys := page.Keys
	if len(keys) != 1 || keys[0].Account != "acme" || keys[0].Quota == nil || *keys[0].Quota != quota {
		t.Fatalf("keys = %+v", keys)
	}
	form.Set(keyFormField, newKeyFormToken()) // another form: refused for Max, not as sent before
	if resp, page := c.request(http.MethodPost, "/keys", alice, form, nil); resp.StatusCode != http.StatusConflict || strings.Contains(page, `id="secret"`) || !strings.Contains(page, "the most its members may hold") {
		t.Fatalf("create past Max = %d", resp.StatusCode)
	}
	// An operator is not bound by the member limits.
	admin := c.login("admin")
	op := url.Values{"csrf": {c.sessionOf(admin).csrf()}, "account": {"acme"}, keyFormField: {newKeyFormToken()}}
	if resp, _ := c.request(http.MethodPost, "/keys", admin, op, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("operator's create = %d", resp.StatusCode)
	}
}

// A member's keys carry the operator's budget; the members of an account create at most
// CreatesPerHour keys in any hour, revoking or not; each create and revoke is logged with the
// member who made it and the key's limits.
func TestMemberKeyBudgetAndCreateRate(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	core, logs := observer.New(zap.InfoLevel)
	c.h.Logger = zap.New(core)
	c.h.MemberKeys = &MemberKeys{Max: 1, Budget: &keyadmin.Budget{Amount: 2_500_000, Period: "day"}, CreatesPerHour: 2}
	alice := c.login("alice")
	csrf := c.sessionOf(alice).csrf()
	form := url.Values{"csrf": {csrf}, "budget": {"1000"}}
	created := func() string {
		t.Helper()
		form.Set(keyFormField, newKeyFormToken())
		resp, page := c.request(http.MethodPost, "/keys", alice, form, nil)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create = %d %s", resp.StatusCode, page)
		}
		p, err := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Account: "acme", Limit: 10})
		if err != nil || len(p.Keys) != 1 {
			t.Fatalf("acme's keys = %+v, %v", p.Keys, err)
		}
		k := p.Keys[0]
		if k.Budget == nil || k.Budget.Amount.String() != "2.5" || k.Budget.Period != "day" || k.Quota != nil {
			t.Fatalf("a member's key has budget %+v, quota %v; want 2.5 a day", k.Budget, k.Quota)
		}
		return k.ID
	}
	revoke := func(id string) {
		t.Helper()
		if resp, _ := c.request(http.MethodPost, "/keys/"+id+"/revoke", alice, url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke = %d", resp.StatusCode)
		}
	}
	first := created()
	revoke(first)
	revoke(created())
	form.Set(keyFormField, newKeyFormToken())
	resp, _ := c.request(http.MethodPost, "/keys", alice, form, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third create in the hour = %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	c.clock = c.clock.Add(time.Hour + time.Second) // the session has ended too
	alice = c.login("alice")
	csrf = c.sessionOf(alice).csrf()
	form.Set("csrf", csrf)
	revoke(created())
	var changes []string
	for _, e := range logs.FilterMessage("console change").All() {
		f := e.ContextMap()
		changes = append(changes, fmt.Sprint(f["user"], " ", f["action"], " ", f["target"]))
	}
	if len(changes) != 6 || changes[0] != "alice create key "+first+" of acme (budget 2.5/day)" || changes[1] != "alice revoke key "+first+" of acme" {
		t.Fatalf("audit log: %q", changes)
	}
}

// A key that a member logged in with an API key creates stays within that key: its models (the
// login key's own when the form names none; a pattern or a model the key may not use is refused),
// its allow_ips, and an expiry no later than the login key's. A configured member is not bounded.
func TestKeysCreatedByAKeyMemberStayWithinIt(t *testing.T) {
	expires := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	key := &keyadmin.KeyView{ID: "k", Account: "acme", Models: []string{"video-a", "seed-*"}, AllowIPs: []string{"10.0.0.0/8"}, Expires: &expires}
	for _, c := range []struct {
		form    []string // the models the form names
		expires string   // the form's expiry, RFC 3339 ("": none)
		refused bool
		models  []string
		until   string
	}{
		{form: nil, models: []string{"video-a", "seed-*"}, until: "2027-03-01T00:00:00Z"},
		{form: []string{"video-a"}, expires: "2027-01-01T00:00:00Z", models: []string{"video-a"}, until: "2027-01-01T00:00:00Z"},
		{form: []string{"seed-*", "seed-pro"}, expires: "2028-01-01T00:00:00Z", models: []string{"seed-*", "seed-pro"}, until: "2027-03-01T00:00:00Z"},
		// Later than the login key's by its offset, though it reads earlier as text.
		{form: []string{"video-a"}, expires: "2027-03-01T00:00:00-12:00", models: []string{"video-a"}, until: "2027-03-01T00:00:00Z"},
		{form: []string{"video-b"}, refused: true},
		{form: []string{"video-*"}, refused: true},
		{form: []string{"*"}, refused: true},
		{form: []string{"seed-?ro"}, refused: true},
	} {
		spec := map[string]any{"account": "acme"}
		if c.form != nil {
			spec["models"] = c.form
		}
		if c.expires != "" {
			spec["expires"] = c.expires
		}
		msg := boundByLoginKey(spec, key)
		if c.refused {
			if msg == "" {
				t.Errorf("models %v: a key beyond the login key's models is not refused: %v", c.form, spec)
			}
			continue
		}
		if msg != "" || fmt.Sprint(spec["models"]) != fmt.Sprint(c.models) || fmt.Sprint(spec["allow_ips"]) != "[10.0.0.0/8]" || spec["expires"] != c.until {
			t.Errorf("models %v, expires %q: %q %v", c.form, c.expires, msg, spec)
		}
	}
	open := &keyadmin.KeyView{ID: "all", Account: "acme"}
	spec := map[string]any{"account": "acme"}
	if msg := boundByLoginKey(spec, open); msg != "" || len(spec) != 1 {
		t.Errorf("an unrestricted login key bounds the new key: %q %v", msg, spec)
	}
	if msg := boundByLoginKey(spec, nil); msg != "" || len(spec) != 1 {
		t.Errorf("a configured member is bounded: %q %v", msg, spec)
	}
}

// A key form's token creates one key (its models split on commas and any white space): sent again it names the key it made and shows no secret;
// a form refused before any key was made (a bad expiry) may be sent again, mended; a form
// without a token creates nothing.
func TestKeyFormTokenCreatesOnce(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	admin := c.login("admin")
	form := url.Values{"csrf": {c.sessionOf(admin).csrf()}, "account": {"acme"}, "expires": {"soon"}}
	if resp, _ := c.request(http.MethodPost, "/keys", admin, form, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("create without a token = %d", resp.StatusCode)
	}
	form.Set(keyFormField, newKeyFormToken())
	if resp, _ := c.request(http.MethodPost, "/keys", admin, form, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("create with a bad expiry = %d", resp.StatusCode)
	}
	form.Set("expires", "")
	form.Set("models", "sim-video\tsim-*\r\nother,last") // patterns split on any white space, and commas
	resp, page := c.request(http.MethodPost, "/keys", admin, form, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("the mended form = %d %s", resp.StatusCode, page)
	}
	p, err := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Account: "acme", Limit: 10})
	if err != nil || len(p.Keys) != 1 || strings.Join(p.Keys[0].Models, " ") != "sim-video sim-* other last" {
		t.Fatalf("acme's keys = %+v, %v", p.Keys, err)
	}
	resp, page = c.request(http.MethodPost, "/keys", admin, form, nil)
	if resp.StatusCode != http.StatusConflict || strings.Contains(page, `id="secret"`) || !strings.Contains(page, p.Keys[0].ID) {
		t.Fatalf("the form sent again = %d, names %s: %v", resp.StatusCode, p.Keys[0].ID, strings.Contains(page, p.Keys[0].ID))
	}
	if p, _ := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Account: "acme", Limit: 10}); len(p.Keys) != 1 {
		t.Fatalf("the form sent again made another key: %+v", p.Keys)
	}
}
