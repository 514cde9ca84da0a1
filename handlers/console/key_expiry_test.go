package console

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The keys list says a key is expired from its expiry on, by the console's clock, as the gateway
// refuses it then: at 23:59:59.999 of the day before a midnight expiry it is active, at 00:00:00
// expired. Its expiry is written in UTC, the day alone for a midnight (the console's form sets a
// day's start) and with the time otherwise, whatever offset it was given in. Before, an expired
// key was listed as active, and an expiry showed its day in its own offset.
func TestKeysListSaysExpired(t *testing.T) {
	for _, tc := range []struct {
		expires, shown string
		at             time.Time // the instant it expires
	}{
		{"2026-12-01T00:00:00Z", "2026-12-01", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"2027-01-01T00:00:00Z", "2027-01-01", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2028-02-29T00:00:00Z", "2028-02-29", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"2028-02-29T23:00:00-01:00", "2028-03-01", time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2028-02-28T20:30:00-12:00", "2028-02-29 08:30:00 UTC", time.Date(2028, 2, 29, 8, 30, 0, 0, time.UTC)},
	} {
		t.Run(tc.expires, func(t *testing.T) {
			c := newTestConsole(t, bcryptTestCost)
			c.clock = tc.at.Add(-time.Minute)
			admin := c.login("admin")
			k, err := c.h.Keys.CreateKey(t.Context(), []byte(`{"account":"acme","expires":"`+tc.expires+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			row := regexp.MustCompile(`<tr><td><code>` + regexp.QuoteMeta(k.ID) + `</code></td>(?s:.*?)</tr>`)
			status := func(at time.Time) string {
				t.Helper()
				c.clock = at
				resp, page := c.request(http.MethodGet, "/keys", admin, nil, nil)
				m := row.FindString(page)
				if resp.StatusCode != http.StatusOK || m == "" {
					t.Fatalf("keys page at %s = %d, without the key's row: %s", at, resp.StatusCode, page)
				}
				if want := "<td>" + tc.shown + "</td>"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(m) {
					t.Errorf("the key's row %s does not show its expiry as %s", m, want)
				}
				return regexp.MustCompile(`<td>(active|expired|disabled)</td>`).FindStringSubmatch(m)[1]
			}
			if got := status(tc.at.Add(-time.Millisecond)); got != "active" {
				t.Errorf("a millisecond before its expiry the key is listed %s, want active", got)
			}
			if got := status(tc.at); got != "expired" {
				t.Errorf("at its expiry the key is listed %s, want expired", got)
			}
		})
	}
}

// A member's prices page counts a key as usable until its expiry, to the nanosecond, as the
// gateway does (auth refuses a key from its expiry on): a key that expires half a second into a
// year still shows its models a tenth of a second into it. Before, the page compared whole Unix
// seconds, so the key was counted expired 0.5 s before the gateway refused it.
func TestPricesPageKeyUsableUntilItsExpiry(t *testing.T) {
	expires := time.Date(2027, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	c := newTestConsole(t, bcryptTestCost)
	c.clock = expires.Add(-time.Minute)
	c.h.Models = func() []string { return []string{"video-pro"} }
	if _, err := c.h.Keys.CreateKey(t.Context(), []byte(`{"account":"acme","models":["video-*"],"expires":"`+expires.Format(time.RFC3339Nano)+`"}`)); err != nil {
		t.Fatal(err)
	}
	alice := c.login("alice")
	for _, tc := range []struct {
		at    time.Time
		shown bool
	}{
		{expires.Add(-500 * time.Millisecond), true}, // 2027-01-01T00:00:00Z
		{expires.Add(-400 * time.Millisecond), true},
		{expires.Add(-time.Nanosecond), true},
		{expires, false},
	} {
		c.clock = tc.at
		resp, page := c.request(http.MethodGet, "/prices", alice, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("prices at %s: %d %s", tc.at.Format(time.RFC3339Nano), resp.StatusCode, page)
		}
		if shown := strings.Contains(page, "video-pro"); shown != tc.shown {
			t.Errorf("at %s the member's prices page shows video-pro: %v, want %v", tc.at.Format(time.RFC3339Nano), shown, tc.shown)
		}
	}
}
