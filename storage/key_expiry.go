package storage

import (
	"errors"
	"time"
)

// EarliestKeyExpiry is the earliest expiry a key may be given. A key's ExpiresAt of the zero time
// means "never expires", so a written time that is (or is near) the zero time, such as
// 0001-01-01T00:00:00Z, would otherwise silently mean "never"; no real expiry is that old.
var EarliestKeyExpiry = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseKeyExpiry reads a key's expiry as written in the configuration or the admin API: an RFC
// 3339 time, from 2000-01-01T00:00:00Z on. The answer is that time, never the zero time;
// "never expires" is written by leaving the expiry out (null in the admin API).
func ParseKeyExpiry(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errors.New("expires must be an RFC 3339 time such as 2027-01-31T00:00:00Z")
	}
	if t.Before(EarliestKeyExpiry) {
		return time.Time{}, errors.New("expires " + s + " is before 2000-01-01T00:00:00Z: write the time the key stops working, " +
			"or for a key that never expires leave expires out (null in the admin API)")
	}
	return t, nil
}
