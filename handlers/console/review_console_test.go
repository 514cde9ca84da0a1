package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// Review: a key form's token belongs to the session whose page made it. Sent from another
// member's session (another account) it must not be answered as "sent before" naming the key it
// made in acme: beta's member is told an id of acme's key and their create is refused.
func TestReviewKeyFormTokenIsTheSessions(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	c.h.Users["bob"] = User{Name: "bob", Account: "beta", PasswordHash: hashPassword(t, testPassword, bcryptTestCost)}
	c.h.MemberKeys = &MemberKeys{Max: 5}
	alice, bob := c.login("alice"), c.login("bob")
	token := newKeyFormToken()
	form := url.Values{"csrf": {c.sessionOf(alice).csrf()}, keyFormField: {token}}
	if resp, page := c.request(http.MethodPost, "/keys", alice, form, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("alice's create = %d %s", resp.StatusCode, page)
	}
	p, err := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Account: "acme", Limit: 10})
	if err != nil || len(p.Keys) != 1 {
		t.Fatalf("acme's keys = %+v %v", p.Keys, err)
	}
	form = url.Values{"csrf": {c.sessionOf(bob).csrf()}, keyFormField: {token}}
	resp, page := c.request(http.MethodPost, "/keys", bob, form, nil)
	if strings.Contains(page, p.Keys[0].ID) {
		t.Fatalf("bob (beta) sending alice's form token = %d, told acme's key id %s", resp.StatusCode, p.Keys[0].ID)
	}
}

// Review: an account that exists in the store under a name that is not NFC (made before the
// rule) stays manageable: the operator can still disable it.
func TestReviewNonNFCAccountInTheStoreCanBeDisabled(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	old := "e\u0301quipe"
	if _, err := c.h.Store.CreateKey(context.Background(), storage.APIKey{ID: "key-old", Account: old, Hash: storage.HashSecret("sk-old-secret")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.h.Keys.SetAccountDisabled(context.Background(), old, true); err != nil {
		t.Fatalf("disabling the existing account %q: %v", old, err)
	}
}

// Review: a login key with a large quota (whole units; the admin API takes any int64) must not
// loosen member_keys' quota: 10^13 units overflow as micro-units in keyBudget, and the login
// key's quota then "bounds" member_keys' 5 and replaces it.
func TestReviewLargeLoginQuotaDoesNotLoosenMemberKeys(t *testing.T) {
	huge := int64(10_000_000_000_000)
	spec := map[string]any{"quota": int64(5)}
	if msg := boundLimitsByLoginKey(spec, &keyadmin.KeyView{Quota: &huge}); msg != "" {
		t.Fatalf("refused: %s", msg)
	}
	if spec["quota"] != int64(5) {
		t.Fatalf("the minted key's quota = %v, want member_keys' 5 (the login key's is %d)", spec["quota"], huge)
	}
}

// cancelAfterCreate is the Redis store of a keyadmin handler whose request's client goes away
// (a second click of the form aborts the first navigation) just after the key is stored.
type cancelAfterCreate struct {
	storage.Store
	cancel context.CancelFunc
}

func (s cancelAfterCreate) CreateKey(ctx context.Context, k storage.APIKey) (storage.APIKey, error) {
	made, err := s.Store.CreateKey(ctx, k)
	s.cancel()
	return made, err
}

// Review: a key form whose client went away after its key was made must still record the key
// under its token, so that the form sent again names that key, not "being sent already" for a
// minute and then a second key. The record is written with the request's context, which the
// client's going away has cancelled.
func TestReviewKeyFormTokenRecordedWhenTheClientLeaves(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	store, err := storage.OpenRedis(t.Context(), storage.RedisOptions{URL: srv.URL(), KeyPrefix: "review-console"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	c := newTestConsoleOn(t, store, bcryptTestCost)
	admin := c.login("admin")
	form := url.Values{"csrf": {c.sessionOf(admin).csrf()}, "account": {"acme"}, keyFormField: {newKeyFormToken()}}
	ctx, cancel := context.WithCancel(t.Context())
	c.h.Keys.Store = cancelAfterCreate{Store: store, cancel: cancel}
	r := httptest.NewRequest(http.MethodPost, "/keys", strings.NewReader(form.Encode())).WithContext(ctx)
	r.RemoteAddr = "192.0.2.10:4711"
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Cookie", admin)
	c.h.ServeHTTP(httptest.NewRecorder(), r)
	c.h.Keys.Store = store
	p, err := c.h.Keys.KeysPage(t.Context(), storage.DirectoryPage{Account: "acme", Limit: 10})
	if err != nil || len(p.Keys) != 1 {
		t.Fatalf("acme's keys = %+v %v", p.Keys, err)
	}
	resp, page := c.request(http.MethodPost, "/keys", admin, form, nil)
	if !strings.Contains(page, p.Keys[0].ID) {
		t.Fatalf("the form sent again = %d, does not name key %s:\n%s", resp.StatusCode, p.Keys[0].ID, notice(page))
	}
}

// notice is the page's text around its first message, for a failure.
func notice(page string) string {
	for _, mark := range []string{"This form", "<main"} {
		if i := strings.Index(page, mark); i >= 0 {
			return page[i:min(len(page), i+300)]
		}
	}
	return page[:min(len(page), 400)]
}

// Review: a configured member of an account named before the NFC rule (the console's user
// directive does not check the name) can still create keys in it.
func TestReviewMemberOfANonNFCAccountCreatesKeys(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	c.h.Users["eve"] = User{Name: "eve", Account: "e\u0301quipe", PasswordHash: hashPassword(t, testPassword, bcryptTestCost)}
	c.h.MemberKeys = &MemberKeys{Max: 5}
	eve := c.login("eve")
	form := url.Values{"csrf": {c.sessionOf(eve).csrf()}, keyFormField: {newKeyFormToken()}}
	if resp, page := c.request(http.MethodPost, "/keys", eve, form, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("eve's create in her account = %d %s", resp.StatusCode, notice(page))
	}
}
