package console

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// keyConsole is a test console whose members may log in with keys (checked by the gateway's
// own authenticator on the same store), with every log entry kept; it returns a key of acme
// and one of beta.
func keyConsole(t *testing.T) (c *testConsole, logs *observer.ObservedLogs, acme, beta string) {
	t.Helper()
	c = newTestConsole(t, bcryptTestCost)
	core, logs := observer.New(zapcore.DebugLevel)
	c.h.Logger = zap.New(core)
	c.h.KeyAuth = &auth.Authenticator{Store: c.h.Store, Now: func() time.Time { return c.clock }}
	ctx := context.Background()
	a, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"beta"}`))
	if err != nil {
		t.Fatal(err)
	}
	return c, logs, a.Key, b.Key
}

func (c *testConsole) keyLogin(secret string) (*http.Response, string) {
	c.t.Helper()
	return c.postLogin(url.Values{"api_key": {secret}}, nil)
}

func sessionCookie(resp *http.Response) string {
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName && ck.Value != "" {
			return ck.Name + "=" + ck.Value
		}
	}
	return ""
}

// A member logs in with an API key of their account and sees that account only. The key is in
// neither the cookie nor any log entry (nor is its hash); the cookie names the key's id.
func TestKeyLoginSeesOnlyItsAccount(t *testing.T) {
	c, logs, acme, beta := keyConsole(t)
	resp, page := c.keyLogin(acme)
	cookie := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || cookie == "" {
		t.Fatalf("key login = %d %s", resp.StatusCode, page)
	}
	sum := sha256.Sum256([]byte(acme))
	for _, secret := range []string{acme, hex.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString([]byte(acme))} {
		if strings.Contains(cookie, secret) {
			t.Fatalf("the session cookie carries the key or its hash: %s", cookie)
		}
		for _, e := range logs.All() {
			if strings.Contains(e.Message+" "+strings.Join(fieldStrings(e), " "), secret) {
				t.Fatalf("a log entry carries the key or its hash: %s %v", e.Message, e.ContextMap())
			}
		}
	}
	s := c.sessionOf(cookie)
	if s.user.Operator() || s.user.Account != "acme" || s.user.KeyID == "" {
		t.Fatalf("the key's session is %+v", s.user)
	}
	for target, want := range map[string]int{
		"/accounts/acme": http.StatusOK, "/accounts/beta": http.StatusNotFound, "/accounts": http.StatusSeeOther,
		"/upstreams": http.StatusNotFound, "/tasks?account=beta": http.StatusOK,
	} {
		if resp, page := c.request(http.MethodGet, target, cookie, nil, nil); resp.StatusCode != want || strings.Contains(page, "beta") {
			t.Errorf("%s as acme's key = %d (want %d), beta shown: %v", target, resp.StatusCode, want, strings.Contains(page, "beta"))
		}
	}
	// A cookie that names beta's key with this session's token is no session: the lease is
	// owned by acme's key.
	betaKey, err := c.h.Store.KeyByHash(context.Background(), hex.EncodeToString(sha256Sum(beta)))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimPrefix(cookie, cookieName+"="), ".")
	if len(parts) != 4 {
		t.Fatalf("session cookie %q", cookie)
	}
	forged := cookieName + "=" + parts[0] + "." + keyUserPrefix + base64.RawURLEncoding.EncodeToString([]byte(betaKey.ID)) + "." + parts[2] + "." + parts[3]
	if c.signedIn(forged) {
		t.Fatal("a cookie naming beta's key with acme's session token is a session")
	}
	if !c.signedIn(cookie) {
		t.Fatal("the forged cookie ended the real session")
	}
}

func sha256Sum(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func fieldStrings(e observer.LoggedEntry) []string {
	var out []string
	for k, v := range e.ContextMap() {
		out = append(out, k, strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(v), "\n", " "), "\t", " ")))
	}
	return out
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// Revoking the key, disabling it or disabling its account ends the session at the next request;
// such a key cannot log in again.
func TestKeySessionEndsWithTheKey(t *testing.T) {
	c, _, acme, _ := keyConsole(t)
	cookie := sessionCookie(first(c.keyLogin(acme)))
	if !c.signedIn(cookie) {
		t.Fatal("no session after the key login")
	}
	if _, err := c.h.Keys.SetAccountDisabled(context.Background(), "acme", true); err != nil {
		t.Fatal(err)
	}
	if c.signedIn(cookie) {
		t.Fatal("the session outlived the account's disabling")
	}
	if resp, _ := c.keyLogin(acme); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a key of a disabled account logs in: %d", resp.StatusCode)
	}
	if _, err := c.h.Keys.SetAccountDisabled(context.Background(), "acme", false); err != nil {
		t.Fatal(err)
	}
	cookie = sessionCookie(first(c.keyLogin(acme)))
	key, err := c.h.Store.KeyByHash(context.Background(), hex.EncodeToString(sha256Sum(acme)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.h.Keys.RevokeKey(context.Background(), key.ID); err != nil {
		t.Fatal(err)
	}
	if c.signedIn(cookie) {
		t.Fatal("the session outlived the key's revocation")
	}
	if resp, _ := c.keyLogin(acme); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked key logs in: %d", resp.StatusCode)
	}
}

func first(resp *http.Response, _ string) *http.Response { return resp }

// Key logins count in the login windows: after 10 wrong keys from one address, even a right key
// is refused with 429 and Retry-After until the window passes. A wrong key is never logged.
func TestKeyLoginsAreRateLimited(t *testing.T) {
	c, logs, acme, _ := keyConsole(t)
	for i := range loginAttempts {
		wrong := "mg-wrong-key-" + strings.Repeat("x", i+1)
		if resp, page := c.keyLogin(wrong); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "cannot log in") {
			t.Fatalf("wrong key %d = %d", i, resp.StatusCode)
		}
	}
	resp, _ := c.keyLogin(acme)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || sessionCookie(resp) != "" {
		t.Fatalf("the right key past the limit = %d", resp.StatusCode)
	}
	// Password logins from the address count in the same window.
	if resp, _ := c.postLogin(url.Values{"username": {"admin"}, "password": {testPassword}}, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a password login from the address past the limit = %d", resp.StatusCode)
	}
	for _, e := range logs.All() {
		if strings.Contains(strings.Join(fieldStrings(e), " "), "mg-wrong-key") {
			t.Fatalf("a wrong key is logged: %v", e.ContextMap())
		}
	}
	c.clock = c.clock.Add(loginWindow + time.Second)
	if resp, _ := c.keyLogin(acme); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right key after the window = %d", resp.StatusCode)
	}
}

// A key with allow_ips logs in only when the forwarded addresses pass too (ForwardedAllowed,
// mediagw_auth's rule behind a lenient trusted proxy); a key without allow_ips is not asked.
func TestKeyLoginChecksForwardedAddresses(t *testing.T) {
	c, _, acme, _ := keyConsole(t)
	office, err := c.h.Keys.CreateKey(context.Background(), []byte(`{"account":"acme","allow_ips":["203.0.113.0/24"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c.h.ClientIP = func(*http.Request) string { return "203.0.113.7" }
	forwardedOK := true
	c.h.ForwardedAllowed = func(r *http.Request, id auth.Identity) bool { return forwardedOK }
	if resp, _ := c.keyLogin(office.Key); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the office key from an allowed address = %d", resp.StatusCode)
	}
	forwardedOK = false
	if resp, page := c.keyLogin(office.Key); resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != "" || !strings.Contains(page, "cannot log in") {
		t.Fatalf("the office key with a forwarded address not allowed = %d", resp.StatusCode)
	}
	if resp, _ := c.keyLogin(acme); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a key without allow_ips = %d", resp.StatusCode)
	}
}

// A key without an account (which the admin API never makes, but a store could hold) logs no
// one in, and names no session: a console user without an account is an operator.
func TestKeyWithoutAccountIsNoOperator(t *testing.T) {
	c, _, _, _ := keyConsole(t)
	const secret = "sk-test-no-account-0123456789"
	if _, err := c.h.Store.CreateKey(context.Background(), storage.APIKey{ID: "k-no-account",
		Hash: storage.HashSecret(secret)}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.keyLogin(secret); resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != "" {
		t.Fatalf("login with a key without an account = %d, cookie %q", resp.StatusCode, sessionCookie(resp))
	}
	if u, _, active, _ := c.h.keySession(httptest.NewRequest(http.MethodGet, "/", nil), "k-no-account"); active {
		t.Fatalf("a key without an account is the session user %+v", u)
	}
}

// A key session ends at the key's expiry exactly, as the gateway refuses the key from that
// instant (auth: expired when now is not before it): a second before it the session reads
// pages, at it the session ends, and moving the expiry later brings the ended cookie back no
// more.
func TestKeySessionEndsAtTheExpiry(t *testing.T) {
	c, _, _, _ := keyConsole(t)
	ctx := context.Background()
	expires := c.clock.Add(5 * time.Minute)
	k, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"acme","expires":"`+expires.Format(time.RFC3339)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	cookie := sessionCookie(first(c.keyLogin(k.Key)))
	c.clock = expires.Add(-time.Second)
	if !c.signedIn(cookie) {
		t.Fatal("no session a second before the key's expiry")
	}
	c.clock = expires
	if c.signedIn(cookie) {
		t.Fatal("the session reads a page at the key's expiry")
	}
	if resp, _ := c.keyLogin(k.Key); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a key logs in at its expiry: %d", resp.StatusCode)
	}
	stored, err := c.h.Store.KeyByID(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored.ExpiresAt = expires.Add(time.Hour)
	if _, err := c.h.Store.UpdateKey(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if c.signedIn(cookie) {
		t.Fatal("a later expiry brought the ended session back")
	}
}
