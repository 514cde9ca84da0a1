package providers

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func testProvider(t *testing.T, ups ...*Upstream) (*Provider, *time.Time) {
	t.Helper()
	for _, u := range ups {
		u.BaseURL, _ = url.Parse("http://127.0.0.1:1/" + u.Name)
	}
	p := &Provider{Name: "p", Upstreams: ups, Models: []string{"m"}}
	c, err := NewCatalog([]*Provider{p})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_000_000, 0)
	c.Health().Now = func() time.Time { return clock }
	return p, &clock
}

func names(list []*Upstream) (out []string) {
	for _, u := range list {
		out = append(out, u.Name)
	}
	return out
}

func TestOrderPrioritiesAndCooldown(t *testing.T) {
	a, b, c := &Upstream{Name: "a"}, &Upstream{Name: "b", Priority: 1}, &Upstream{Name: "c", Priority: 2}
	p, clock := testProvider(t, a, b, c)
	if got := names(mustOrder(t, p)); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("order = %v; want by priority", got)
	}
	a.Failed(acct, "HTTP 503", 0)
	if got := names(mustOrder(t, p)); len(got) != 2 || got[0] != "b" {
		t.Fatalf("order with a cooling = %v", got)
	}
	// The cooldown grows with each failure in a row: 1 s, 2 s, 4 s …
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if i > 0 {
			a.Failed(acct, "HTTP 503", 0)
		}
		if got := a.CoolingUntil(acct).Sub(*clock); got != want {
			t.Fatalf("failure %d: cooldown %v, want %v", i+1, got, want)
		}
		*clock = a.CoolingUntil(acct)
	}
	a.Succeeded(acct)
	a.Failed(acct, "HTTP 429", 30*time.Second) // Retry-After wins when longer
	if got := a.CoolingUntil(acct).Sub(*clock); got != 30*time.Second {
		t.Fatalf("cooldown after Retry-After 30 = %v", got)
	}
	b.Failed(acct, "refused", 0)
	c.Failed(acct, "refused", 10*time.Second)
	if order, wait := p.Order(acct); len(order) != 0 || wait != time.Second {
		t.Fatalf("all cooling: order %v, wait %v; want none and 1 s", names(order), wait)
	}
	e := NoUpstream(p, 1500*time.Millisecond)
	if e.Status != 503 || e.RetryAfter < time.Second || e.Code != "upstream_unavailable" {
		t.Fatalf("NoUpstream = %+v", e)
	}
	*clock = clock.Add(time.Second)
	if got := names(mustOrder(t, p)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("after b's cooldown: %v", got)
	}
}

func TestOrderWeights(t *testing.T) {
	a, b := &Upstream{Name: "a", Weight: 3}, &Upstream{Name: "b"}
	p, _ := testProvider(t, a, b)
	first := map[string]int{}
	for range 20000 {
		order := mustOrder(t, p)
		if len(order) != 2 || order[0] == order[1] {
			t.Fatalf("order %v", names(order))
		}
		first[order[0].Name]++
	}
	if n := first["a"]; n < 14000 || n > 16000 {
		t.Fatalf("a came first %d times in 20000; want about 15000", n)
	}
}

func mustOrder(t *testing.T, p *Provider) []*Upstream {
	t.Helper()
	order, _ := p.Order(acct)
	return order
}

func TestDispatchRetries(t *testing.T) {
	a, b := &Upstream{Name: "a"}, &Upstream{Name: "b", Priority: 1}
	p, _ := testProvider(t, a, b)
	d := NewDispatch(p, mustOrder(t, p))
	d.Account = acct
	if d.CanRetry() {
		t.Fatal("a dispatch without a replayable body must not retry")
	}
	d.Body = replayNothing{}
	d.Attempt(a)
	a.Failed(acct, "refused", 0)
	if !d.CanRetry() || names(d.Untried())[0] != "b" || d.Answered() != a {
		t.Fatalf("after a failed: retry %v, untried %v", d.CanRetry(), names(d.Untried()))
	}
	d.Attempt(b)
	if d.CanRetry() || len(d.Untried()) != 0 || d.Answered() != b {
		t.Fatalf("after b: retry %v, untried %v", d.CanRetry(), names(d.Untried()))
	}
}

type replayNothing struct{}

func (replayNothing) Replay() (io.ReadCloser, error) { return http.NoBody, nil }

// Untried puts upstreams that began to cool down after the order was made last, keeps the rest
// in order, and appends to what the caller gave; Yielded finds each key's upstream and no other;
// Attempt tells the first attempt from the later ones.
func TestDispatchUntriedYieldedAttempt(t *testing.T) {
	a, b, c := &Upstream{Name: "a"}, &Upstream{Name: "b", Priority: 1}, &Upstream{Name: "c", Priority: 2}
	p, _ := testProvider(t, a, b, c)
	d := NewDispatch(p, mustOrder(t, p))
	d.Account = acct
	a.Failed(acct, "refused", 0) // cools down after the order was made
	got := d.AppendUntried([]*Upstream{c})
	if n := names(got); len(n) != 4 || n[0] != "c" || n[1] != "b" || n[2] != "c" || n[3] != "a" {
		t.Fatalf("AppendUntried = %v, want [c b c a]", n)
	}
	keys := []*int{new(int), new(int), new(int)}
	for i, u := range []*Upstream{a, b, c} {
		d.Yield(keys[i], u)
	}
	for i, u := range []*Upstream{a, b, c} {
		if got, ok := d.Yielded(keys[i]); !ok || got != u {
			t.Errorf("Yielded(key %d) = %v, %v; want %s", i, got, ok, u.Name)
		}
	}
	if got, ok := d.Yielded(new(int)); ok {
		t.Errorf("an unknown key stands for %s", got.Name)
	}
	if !d.Attempt(b) || d.Attempt(c) || d.Attempt(a) {
		t.Error("only the first attempt is the first")
	}
	if n := names(d.Untried()); len(n) != 0 {
		t.Errorf("after three attempts, untried %v", n)
	}
}

// The admin view shows what selection uses: the weight an upstream counts with (1 when none was
// configured) and an empty list, not null, of recent failures.
func TestStateShowsTheEffectiveWeight(t *testing.T) {
	a, b := &Upstream{Name: "a"}, &Upstream{Name: "b", Weight: 3}
	p, _ := testProvider(t, a, b)
	health := p.health
	if health == nil {
		t.Fatal("provider has no health board")
	}
	for _, tc := range []struct {
		u    *Upstream
		want int
	}{{a, 1}, {b, 3}} {
		tc.u.Succeeded(acct) // a record without failures
		st := health.State(tc.u)
		if st.Weight != tc.want || st.Recent == nil || len(st.Recent) != 0 {
			t.Fatalf("%s: weight %d, recent %#v; want weight %d and an empty list", tc.u.Name, st.Weight, st.Recent, tc.want)
		}
	}
}

// acct is the account of the requests in these tests.
const acct = "acme"
