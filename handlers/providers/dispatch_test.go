package providers

import (
	"net/url"
	"testing"
)

// dispatchSink keeps TestDispatchAllocations's dispatches on the heap, as a request's is.
var dispatchSink *Dispatch

// A pass-through request to a provider of two upstreams that the first one answers (the upstream
// source yields both) allocates its Dispatch and nothing more, in the 256-byte size class; a
// failover to the second (which yields it again) allocates once more; and each yielded key
// still finds its upstream.
func TestDispatchAllocations(t *testing.T) {
	base, err := url.Parse("http://upstream.test/v1")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Name: "p", Models: []string{"m"}, Upstreams: []*Upstream{{Name: "a", BaseURL: base}, {Name: "b", BaseURL: base}}}
	if _, err := NewCatalog([]*Provider{p}); err != nil {
		t.Fatal(err)
	}
	a, b := p.Upstreams[0], p.Upstreams[1]
	keys := [3]*int{new(int), new(int), new(int)}
	answered := func() *Dispatch {
		d := NewDispatch(p, p.Upstreams)
		d.Yield(keys[0], a)
		d.Yield(keys[1], b)
		d.Attempt(a)
		return d
	}
	failover := func() *Dispatch {
		d := answered()
		d.Yield(keys[2], b)
		d.Attempt(b)
		return d
	}
	for _, c := range []struct {
		name         string
		request      func() *Dispatch
		allocs, size int64
	}{
		{"answered by the first upstream", answered, 1, 256},
		{"failover", failover, 2, 256 + 96},
	} {
		result := testing.Benchmark(func(tb *testing.B) {
			tb.ReportAllocs()
			for tb.Loop() {
				dispatchSink = c.request()
			}
		})
		if allocs, bytes := result.AllocsPerOp(), result.AllocedBytesPerOp(); allocs > c.allocs || bytes > c.size {
			t.Errorf("%s: %d allocations, %d bytes; want at most %d, %d", c.name, allocs, bytes, c.allocs, c.size)
		}
	}
	d := failover()
	for i, want := range []*Upstream{a, b, b} {
		if u, ok := d.Yielded(keys[i]); !ok || u != want {
			t.Errorf("key %d stands for %v (%v), want %s", i, u, ok, want.Name)
		}
	}
	if _, ok := d.Yielded(new(int)); ok {
		t.Error("a key never yielded stands for an upstream")
	}
	if d.Answered() != b || len(d.Tried()) != 2 {
		t.Errorf("answered by %s after trying %v", d.Answered().Name, d.Tried())
	}
}

// TestDispatchNeverSent: a request is known never sent only once the mediagw transport tried it
// (Attempt) and no attempt was written (MarkSent); one no attempt was recorded for may have
// gone through another transport.
func TestDispatchNeverSent(t *testing.T) {
	base, err := url.Parse("http://upstream.test/v1")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Name: "p", Models: []string{"m"}, Upstreams: []*Upstream{{Name: "a", BaseURL: base}}}
	if _, err := NewCatalog([]*Provider{p}); err != nil {
		t.Fatal(err)
	}
	d := NewDispatch(p, p.Upstreams)
	if d.NeverSent() {
		t.Fatal("a request no attempt was recorded for is known never sent")
	}
	d.Attempt(p.Upstreams[0])
	if !d.NeverSent() {
		t.Fatal("an attempt that was not written is not known never sent")
	}
	d.MarkSent()
	if d.NeverSent() {
		t.Fatal("a written attempt is known never sent")
	}
}
