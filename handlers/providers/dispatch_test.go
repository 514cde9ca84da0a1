package providers

import (
	"net/url"
	"testing"
)

// dispatchSink keeps TestDispatchOfTwoUpstreamsAllocatesOnce's dispatches on the heap, as a
// request's is.
var dispatchSink *Dispatch

// A pass-through request to a provider of two upstreams, through a failover from the first to
// the second (the upstream source yields both, then the one left), allocates its Dispatch and
// nothing more, in the 288-byte size class; and each yielded key still finds its upstream.
func TestDispatchOfTwoUpstreamsAllocatesOnce(t *testing.T) {
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
	failover := func() *Dispatch {
		d := NewDispatch(p, p.Upstreams)
		d.Yield(keys[0], a)
		d.Yield(keys[1], b)
		d.Attempt(a)
		d.Yield(keys[2], b)
		d.Attempt(b)
		return d
	}
	result := testing.Benchmark(func(tb *testing.B) {
		tb.ReportAllocs()
		for tb.Loop() {
			dispatchSink = failover()
		}
	})
	if allocs, bytes := result.AllocsPerOp(), result.AllocedBytesPerOp(); allocs != 1 || bytes > 288 {
		t.Errorf("a failover allocates %d objects, %d bytes; want the Dispatch alone, at most 288 bytes", allocs, bytes)
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
