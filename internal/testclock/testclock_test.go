package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestInstantsCrossTheirDays(t *testing.T) {
	var ran []time.Time
	Each(t, func(t *testing.T, at time.Time) { ran = append(ran, at) })
	if len(ran) != len(Instants) {
		t.Fatalf("Each ran %d times for %d instants", len(ran), len(Instants))
	}
	leapDay := false
	for _, at := range Instants {
		if at.Location() != time.UTC {
			t.Errorf("%s is not UTC", at)
		}
		leapDay = leapDay || (at.Month() == time.February && at.Day() == 29)
	}
	if !leapDay {
		t.Error("no instant on 29 February")
	}
	for _, i := range []int{0, 1, 3} { // the ends of a month, a year and a leap day
		if next := Instants[i].Add(time.Minute); next.Day() != 1 || next.Hour() != 0 {
			t.Errorf("%s is not within a minute of a month's start", Instants[i])
		}
	}
}

func TestClockIsSetAndAdvanced(t *testing.T) {
	at := Instants[0]
	c := New(at)
	if !c.Now().Equal(at) {
		t.Fatalf("Now = %s, want %s", c.Now(), at)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { c.Advance(time.Second) })
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(at.Add(4 * time.Second)) {
		t.Fatalf("after four advances of a second: %s", got)
	}
	c.Set(Instants[1])
	if !c.Now().Equal(Instants[1]) {
		t.Fatalf("after Set: %s", c.Now())
	}
}
