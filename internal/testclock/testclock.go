// Package testclock gives tests a clock they set, and the instants at which the date-sensitive
// code is run: the ends of a month and a year, 29 February and a day a year ahead. Code under test
// takes its clock as a field (`Now func() time.Time`); a test passes Clock.Now there, so no test
// depends on the day or the time of day it runs.
package testclock

import (
	"sync"
	"testing"
	"time"
)

// Instants are the moments at which date-sensitive tests run. Each is chosen so that a day, a
// month or a year (or a leap day) begins within a minute of it, or so that it lies well after the
// day the code was written.
var Instants = []time.Time{
	time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC), // a month's end
	time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC), // a year's end
	time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC),    // the middle of a leap day
	time.Date(2028, 2, 29, 23, 59, 30, 0, time.UTC),  // the end of a leap day
	time.Date(2027, 11, 26, 10, 0, 0, 0, time.UTC),   // a year ahead
}

// Midnights are UTC midnights that end a month, a year, the day before 29 February and 29
// February itself, for tests of what happens a millisecond before a midnight and at it.
var Midnights = []time.Time{
	time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC),
	time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC),
}

// Each runs f as a subtest once for every instant of Instants, named by the instant.
func Each(t *testing.T, f func(t *testing.T, at time.Time)) {
	t.Helper()
	for _, at := range Instants {
		t.Run(at.Format(time.RFC3339), func(t *testing.T) { f(t, at) })
	}
}

// Clock is a clock that stands still until it is set or advanced. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	at time.Time
}

// New returns a clock that reads at.
func New(at time.Time) *Clock { return &Clock{at: at} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Set moves the clock to at.
func (c *Clock) Set(at time.Time) {
	c.mu.Lock()
	c.at = at
	c.mu.Unlock()
}

// Advance moves the clock on by d and returns the new reading.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
	return c.at
}
