package auth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func TestAuthenticate(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	fixed := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

	static := map[string]storage.APIKey{}
	add := func(secret string, k storage.APIKey) {
		k.Hash = storage.HashSecret(secret)
		static[k.Hash] = k
	}
	add("mg-good", storage.APIKey{ID: "k-good", Account: "acme", Models: []string{"gpt-*"}})
	add("mg-off", storage.APIKey{ID: "k-off", Account: "acme", Disabled: true})
	add("mg-old", storage.APIKey{ID: "k-old", Account: "acme", ExpiresAt: fixed})
	add("mg-later", storage.APIKey{ID: "k-later", Account: "acme", ExpiresAt: fixed.Add(time.Second)})
	add("mg-banned", storage.APIKey{ID: "k-banned", Account: "banned"})
	add("mg-ips", storage.APIKey{ID: "k-ips", Account: "acme", AllowIPs: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}})
	if _, err := store.CreateKey(ctx, storage.APIKey{ID: "k-dyn", Hash: storage.HashSecret("mg-dynamic"), Account: "frozen"}); err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{Static: static, DisabledAccounts: map[string]bool{"banned": true}, Store: store,
		Now: func() time.Time { return fixed }}

	local := netip.MustParseAddr("192.0.2.1")
	for _, tc := range []struct {
		name   string
		header string
		ip     netip.Addr
		wantID string
		want   error
	}{
		{"valid", "Bearer mg-good", local, "k-good", nil},
		{"scheme is case-insensitive", "bearer mg-good", local, "k-good", nil},
		{"missing", "", local, "", ErrMissingKey},
		{"basic scheme", "Basic bWc6Z29vZA==", local, "", ErrMalformedKey},
		{"no token", "Bearer ", local, "", ErrMalformedKey},
		{"two tokens", "Bearer mg-good extra", local, "", ErrMalformedKey},
		{"unknown", "Bearer mg-nope", local, "", ErrUnknownKey},
		{"disabled key", "Bearer mg-off", local, "", ErrKeyDisabled},
		{"expired at the instant", "Bearer mg-old", local, "", ErrKeyExpired},
		{"not yet expired", "Bearer mg-later", local, "k-later", nil},
		{"disabled account by config", "Bearer mg-banned", local, "", ErrAccountDisabled},
		{"ip inside v4 range", "Bearer mg-ips", netip.MustParseAddr("10.9.8.7"), "k-ips", nil},
		{"ip as v4-mapped v6", "Bearer mg-ips", netip.MustParseAddr("::ffff:10.9.8.7"), "k-ips", nil},
		{"ip inside v6 range", "Bearer mg-ips", netip.MustParseAddr("2001:db8::1"), "k-ips", nil},
		{"ip outside", "Bearer mg-ips", local, "", ErrIPNotAllowed},
		{"unknown ip with allow-list", "Bearer mg-ips", netip.Addr{}, "", ErrIPNotAllowed},
		{"key from the store", "Bearer mg-dynamic", local, "k-dyn", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := a.Authenticate(ctx, tc.header, tc.ip)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if id.KeyID != tc.wantID {
				t.Fatalf("key id = %q, want %q", id.KeyID, tc.wantID)
			}
			if secret, err := bearerToken(tc.header); err == nil {
				shared, err := a.AuthenticateShared(ctx, secret, tc.ip)
				if !errors.Is(err, tc.want) || (shared == nil) != (tc.want != nil) || shared != nil && (fmt.Sprint(shared.Identity) != fmt.Sprint(id) ||
					shared.KeyIDValue != id.KeyID || shared.AccountValue != id.Account) {
					t.Fatalf("AuthenticateShared = %v, %v; want %+v, %v", shared, err, id, tc.want)
				}
			}
		})
	}

	// Disabling the account in the store takes effect on the next request.
	if _, err := store.SaveAccount(ctx, storage.Account{Name: "frozen", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, "Bearer mg-dynamic", local); !errors.Is(err, ErrAccountDisabled) {
		t.Fatalf("after disabling the account: err = %v", err)
	}
}

func TestMatchModel(t *testing.T) {
	for _, tc := range []struct {
		pattern, model string
		want           bool
	}{
		{"*", "anything/at-all", true},
		{"gpt-*", "gpt-4o-mini", true},
		{"gpt-*", "gpt-", true},
		{"gpt-*", "chatgpt-4o", false},
		{"*-mini", "gpt-4o-mini", true},
		{"openai/*", "openai/gpt-4o", true},
		{"claude-?onnet-*", "claude-sonnet-4-5", true},
		{"claude-?onnet-*", "claude-onnet-4-5", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"", "", true},
		{"", "x", false},
	} {
		if got := MatchModel(tc.pattern, tc.model); got != tc.want {
			t.Errorf("MatchModel(%q, %q) = %v, want %v", tc.pattern, tc.model, got, tc.want)
		}
	}
	if !(Identity{}).AllowsModel("any") {
		t.Error("an identity without patterns must allow every model")
	}
	if (Identity{Models: []string{"a*"}}).AllowsModel("b") {
		t.Error("pattern a* allowed b")
	}
}

func FuzzMatchModel(f *testing.F) {
	f.Add("gpt-*", "gpt-4o")
	f.Add("*a*b*c*", "xaybzc")
	f.Fuzz(func(t *testing.T, pattern, model string) {
		if len(pattern) > 64 || len(model) > 256 {
			return
		}
		MatchModel(pattern, model)
		if !MatchModel("*", model) || !MatchModel(model, model) && !containsWildcard(model) {
			t.Fatalf("identity match failed for %q", model)
		}
	})
}

func FuzzBearerToken(f *testing.F) {
	f.Add("Bearer abc")
	f.Add("bearer  x")
	f.Fuzz(func(t *testing.T, header string) {
		tok, err := bearerToken(header)
		if err == nil && (tok == "" || len(tok) >= len(header)) {
			t.Fatalf("token %q from %q", tok, header)
		}
	})
}

func containsWildcard(s string) bool {
	for _, c := range s {
		if c == '*' || c == '?' {
			return true
		}
	}
	return false
}

// A configured (static) key is found without an allocation: its secret's hash is encoded on the
// stack, and the identity shares the key's slices.
func TestAuthenticateStaticKeyAllocatesNothing(t *testing.T) {
	secret := "mg-a-secret-longer-than-thirty-two-bytes-0123456789"
	k := storage.APIKey{ID: "k1", Account: "acme", Hash: storage.HashSecret(secret), Models: []string{"gpt-*"}}
	a := &Authenticator{Static: map[string]storage.APIKey{k.Hash: k}}
	ctx, ip := context.Background(), netip.MustParseAddr("192.0.2.1")
	allocs := testing.AllocsPerRun(100, func() {
		if id, err := a.AuthenticateKey(ctx, secret, ip); err != nil || id.KeyID != "k1" {
			t.Fatalf("AuthenticateKey = %+v, %v", id, err)
		}
	})
	if allocs != 0 {
		t.Errorf("AuthenticateKey of a static key: %v allocations, want 0", allocs)
	}
}

// A configured key's requests share one caller (its identity and placeholder values), made at the
// first and found without an allocation; a stored key's each get their own, as its record may
// change between them.
func TestAuthenticateSharedIdentity(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, ip := context.Background(), netip.MustParseAddr("192.0.2.1")
	secret := "mg-a-secret-longer-than-thirty-two-bytes-0123456789"
	k := storage.APIKey{ID: "k1", Account: "acme", Hash: storage.HashSecret(secret), Models: []string{"gpt-*"}}
	if _, err := store.CreateKey(ctx, storage.APIKey{ID: "k-dyn", Hash: storage.HashSecret("mg-dynamic"), Account: "acme"}); err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{Static: map[string]storage.APIKey{k.Hash: k}, Store: store}
	first, err := a.AuthenticateShared(ctx, secret, ip)
	if err != nil || first.KeyID != "k1" || first.Account != "acme" || first.Models[0] != "gpt-*" || first.KeyIDValue != "k1" || first.AccountValue != "acme" {
		t.Fatalf("AuthenticateShared = %+v, %v", first, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if id, err := a.AuthenticateShared(ctx, secret, ip); err != nil || id != first {
			t.Fatalf("a later request got %p (%v), not the key's identity %p", id, err, first)
		}
	})
	if allocs != 0 {
		t.Errorf("AuthenticateShared of a static key: %v allocations, want 0", allocs)
	}
	one, err := a.AuthenticateShared(ctx, "mg-dynamic", ip)
	if err != nil || one.KeyID != "k-dyn" {
		t.Fatalf("stored key: %+v, %v", one, err)
	}
	if two, err := a.AuthenticateShared(ctx, "mg-dynamic", ip); err != nil || two == one || fmt.Sprint(two.Identity) != fmt.Sprint(one.Identity) {
		t.Errorf("a stored key's second request got %p (%v), its first %p", two, err, one)
	}
}
