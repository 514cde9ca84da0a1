package accounting

import (
	"regexp"
	"sync"
	"testing"
)

// TestNewHoldIDUnique takes ids from several goroutines at once: each is "hold_" and 24 hex
// digits, and none repeats.
func TestNewHoldIDUnique(t *testing.T) {
	form := regexp.MustCompile(`^hold_[0-9a-f]{24}$`)
	const goroutines, each = 8, 1000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], newHoldID())
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, list := range ids {
		for _, id := range list {
			if !form.MatchString(id) {
				t.Fatalf("hold id %q is not hold_ and 24 hex digits", id)
			}
			if seen[id] {
				t.Fatalf("hold id %q was taken twice", id)
			}
			seen[id] = true
		}
	}
}

func BenchmarkNewHoldID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newHoldID()
	}
}
