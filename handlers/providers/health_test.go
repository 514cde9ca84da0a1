package providers

import (
	"testing"
	"time"
)

// One account's failures back that account off; the upstream serves the others, until failures
// of CoolingAccounts accounts within FailureWindow cool it down for all. A success of anyone
// ends the upstream's run; an account's own success ends its backoff.
func TestHealthCountsAccounts(t *testing.T) {
	a, b := &Upstream{Name: "a"}, &Upstream{Name: "b", Priority: 1}
	p, clock := testProvider(t, a, b)
	first := func(account string) string {
		t.Helper()
		order, _ := p.Order(account)
		if len(order) == 0 {
			return ""
		}
		return order[0].Name
	}
	for range 5 {
		a.Failed("mallory", "HTTP 500", 0)
	}
	if first("mallory") != "b" || first("alice") != "a" {
		t.Fatalf("after mallory's failures: mallory starts at %q, alice at %q; want b and a", first("mallory"), first("alice"))
	}
	if st := p.health.State(a); !st.Healthy || st.Failures != 5 || st.AccountsBackingOff != 1 {
		t.Fatalf("state = %+v, want healthy with 5 failures and one account backing off", st)
	}
	// A long Retry-After is honoured up to MaxRetryAfter, for the account that drew it.
	b.Failed("mallory", "HTTP 429", 24*time.Hour)
	if got := b.CoolingUntil("mallory").Sub(*clock); got != MaxRetryAfter {
		t.Fatalf("mallory's backoff after Retry-After 24 h = %v, want %v", got, MaxRetryAfter)
	}
	if order, wait := p.Order("mallory"); len(order) != 0 || wait <= 0 || wait > MaxRetryAfter {
		t.Fatalf("mallory: order %v, wait %v", names(order), wait)
	}
	// Failures of a second account within the window: a cools down for everyone.
	*clock = clock.Add(FailureWindow / 2)
	a.Failed("alice", "HTTP 503", 0)
	if first("carol") != "b" || !a.CoolingUntil("carol").After(*clock) {
		t.Fatalf("after two accounts failed, carol starts at %q", first("carol"))
	}
	// Someone's success ends the upstream's run; a failure of one account later does not cool it.
	*clock = a.CoolingUntil("carol")
	a.Succeeded("carol")
	a.Failed("alice", "HTTP 503", 0)
	if first("carol") != "a" || first("alice") != "b" {
		t.Fatalf("after a success and alice's failure: carol at %q, alice at %q", first("carol"), first("alice"))
	}
	// Failures older than the window do not count toward the cooldown for all.
	*clock = clock.Add(FailureWindow + time.Second)
	a.Failed("mallory", "HTTP 500", 0)
	if first("carol") != "a" {
		t.Fatalf("alice's failure outside the window still counted: carol at %q", first("carol"))
	}
	// alice's own success ends her backoff.
	a.Succeeded("alice")
	if first("alice") != "a" {
		t.Fatalf("after her success, alice starts at %q", first("alice"))
	}
}
