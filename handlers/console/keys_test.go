package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

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
	if resp, page := c.request(http.MethodPost, "/keys", alice, form, nil); resp.StatusCode != http.StatusConflict || strings.Contains(page, `id="secret"`) {
		t.Fatalf("create past Max = %d", resp.StatusCode)
	}
	// An operator is not bound by the member limits.
	admin := c.login("admin")
	op := url.Values{"csrf": {c.sessionOf(admin).csrf()}, "account": {"acme"}}
	if resp, _ := c.request(http.MethodPost, "/keys", admin, op, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("operator's create = %d", resp.StatusCode)
	}
}
