package auth

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestKeyExpiryAcrossDates runs key expiry at the ends of a month, a year and a leap day: a key
// that expires at the next midnight works until then and is refused from that instant on.
func TestKeyExpiryAcrossDates(t *testing.T) {
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		midnight := at.Truncate(24 * time.Hour).Add(24 * time.Hour)
		key := storage.APIKey{ID: "k-day", Account: "acme", Hash: storage.HashSecret("mg-day"), ExpiresAt: midnight}
		a := &Authenticator{Static: map[string]storage.APIKey{key.Hash: key}, Now: clock.Now}
		ip := netip.MustParseAddr("192.0.2.1")
		check := func(want error) {
			t.Helper()
			id, err := a.Authenticate(context.Background(), "Bearer mg-day", ip)
			if !errors.Is(err, want) {
				t.Fatalf("at %s: err = %v, want %v", clock.Now().Format(time.RFC3339), err, want)
			}
			if want == nil && id.KeyID != "k-day" {
				t.Fatalf("at %s: key id = %q", clock.Now().Format(time.RFC3339), id.KeyID)
			}
		}
		check(nil)
		clock.Set(midnight.Add(-time.Nanosecond))
		check(nil)
		clock.Set(midnight)
		check(ErrKeyExpired)
		clock.Advance(time.Hour)
		check(ErrKeyExpired)
	})
}
