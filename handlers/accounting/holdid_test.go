package accounting

import (
	"regexp"
	"sync"
	"testing"
)

// TestNewHoldIDUnique takes more ids than one page of the entropy pool holds, from several
// goroutines at once: each is "hold_" and 24 hex digits, and none repeats (a repeat would be a
// page, or part of one, handed out twice).
func TestNewHoldIDUnique(t *testing.T) {
	form := regexp.MustCompile(`^hold_[0-9a-f]{24}$`)
	const goroutines, each = 8, 1000 // 8,000 ids: about 23 pages of entropy
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

// TestEntropyPoolRefills reads past the end of a page: the bytes that do not fit what is left
// of the page come from a new one, and none is handed out twice.
func TestEntropyPoolRefills(t *testing.T) {
	var p entropyPool
	var first [4000]byte
	p.read(first[:])
	if p.next != 4000 {
		t.Fatalf("after 4000 bytes next = %d", p.next)
	}
	var b [100]byte // 96 bytes are left: a new page
	p.read(b[:])
	if p.next != 100 {
		t.Fatalf("a read that does not fit the page's rest should start a new page; next = %d", p.next)
	}
}

func BenchmarkNewHoldID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newHoldID()
	}
}
