package caddymodule

import "testing"

// TestUpstreamListsAreTheirOwn: each request's list holds n distinct zero upstreams, with no
// room to append into another's (reverse_proxy provisions, that is writes, every one).
func TestUpstreamListsAreTheirOwn(t *testing.T) {
	for n := range 7 {
		a, b := newUpstreamList(n), newUpstreamList(n)
		if len(a) != n || cap(a) != n {
			t.Fatalf("n=%d: len %d cap %d", n, len(a), cap(a))
		}
		seen := map[any]bool{}
		for i := range a {
			if a[i] == nil || a[i] == b[i] || seen[a[i]] || a[i].Dial != "" || a[i].Host != nil {
				t.Fatalf("n=%d: upstream %d is nil, shared or not zero", n, i)
			}
			seen[a[i]] = true
		}
	}
}
