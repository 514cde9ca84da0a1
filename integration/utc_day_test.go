package integration

import (
	"testing"
	"time"
)

// withinOneUTCDay runs steps, which spend against a key's budget of a UTC day or month (a new key
// each run), once more when a UTC midnight passed while they ran: a day's or a month's budget
// starts over at a UTC midnight, so steps that straddle one see part of their spending in the
// next period's budget. The second run starts just after that midnight, so it falls in one day.
// The gateway runs in this process, on the same clock.
func withinOneUTCDay(t *testing.T, steps func()) {
	t.Helper()
	day := func() string { return time.Now().UTC().Format(time.DateOnly) }
	for range 2 {
		began := day()
		steps()
		if day() == began {
			return
		}
		t.Logf("a UTC midnight passed while the steps ran (%s, then %s): running them again", began, day())
	}
	t.Fatal("a UTC midnight passed during each of two runs of the steps")
}
