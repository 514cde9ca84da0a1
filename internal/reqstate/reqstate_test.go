package reqstate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/reqstate"
)

// Each part of the state is found through its own package's lookup, whichever way it was put in
// the context, and a context derived from another never changes what the other one carries.
func TestLookupsAndDerivedContexts(t *testing.T) {
	base := context.Background()
	if _, ok := auth.FromContext(base); ok {
		t.Fatal("an empty context has an identity")
	}
	if usage.From(base) != nil {
		t.Fatal("an empty context has an entry")
	}
	if _, ok := providers.DispatchFrom(base); ok {
		t.Fatal("an empty context has a dispatch")
	}
	entry := usage.NewEntry("chat")
	withEntry := usage.WithEntry(base, entry)
	withBoth := auth.WithIdentity(withEntry, auth.Identity{KeyID: "k1", Account: "acme"})
	d := providers.NewDispatch(nil, nil)
	withAll := providers.WithDispatch(withBoth, d)

	if id, ok := auth.FromContext(withAll); !ok || id.KeyID != "k1" {
		t.Errorf("identity = %+v, %v", id, ok)
	}
	if usage.From(withAll) != entry {
		t.Error("the entry was lost to a later value")
	}
	if got, ok := providers.DispatchFrom(withAll); !ok || got != d {
		t.Error("no dispatch")
	}
	// The contexts withAll was derived from are as they were.
	if _, ok := providers.DispatchFrom(withBoth); ok {
		t.Error("deriving a dispatch changed the parent context")
	}
	if _, ok := auth.FromContext(withEntry); ok {
		t.Error("deriving an identity changed the parent context")
	}
	// A later identity shadows an earlier one, in the derived context only.
	other := auth.WithIdentity(withAll, auth.Identity{KeyID: "k2"})
	if id, _ := auth.FromContext(other); id.KeyID != "k2" {
		t.Errorf("shadowing identity = %q", id.KeyID)
	}
	if id, _ := auth.FromContext(withAll); id.KeyID != "k1" {
		t.Errorf("shadowed identity changed to %q", id.KeyID)
	}
	if usage.From(other) != entry {
		t.Error("the entry was lost when the identity was replaced")
	}
}

// SetDispatch sets a dispatch in place only in a request's own state (mediagw_auth's) that lacks
// one; any other state (one a test or another handler built, which may serve several requests)
// is left alone, and the caller derives a context instead.
func TestSetDispatchOnlyInARequestsOwnState(t *testing.T) {
	d1, d2 := providers.NewDispatch(nil, nil), providers.NewDispatch(nil, nil)

	shared := auth.WithIdentity(context.Background(), auth.Identity{KeyID: "k1"})
	if providers.SetDispatch(shared, d1) {
		t.Error("SetDispatch changed a state that is no request's own")
	}
	if _, ok := providers.DispatchFrom(shared); ok {
		t.Error("a shared state got a dispatch")
	}
	if providers.SetDispatch(context.Background(), d1) {
		t.Error("SetDispatch reported a context without state as set")
	}

	id := auth.Identity{KeyID: "k1"}
	state := &reqstate.State{Identity: &id, Request: true}
	ctx := reqstate.With(context.Background(), state)
	if !providers.SetDispatch(ctx, d1) {
		t.Fatal("SetDispatch did not set the dispatch of a request's own state")
	}
	if got, _ := providers.DispatchFrom(ctx); got != d1 {
		t.Error("the dispatch set is not found")
	}
	// A second dispatch for the same request (a second mediagw_route) derives a context: the
	// first one's stays where it was.
	if providers.SetDispatch(ctx, d2) {
		t.Error("SetDispatch replaced a dispatch")
	}
	derived := providers.WithDispatch(ctx, d2)
	if got, _ := providers.DispatchFrom(derived); got != d2 {
		t.Error("the derived dispatch is not found")
	}
	if got, _ := providers.DispatchFrom(ctx); got != d1 {
		t.Error("WithDispatch changed the request's own state")
	}
	if providers.SetDispatch(derived, d2) {
		t.Error("a derived state counts as the request's own")
	}
	if got, _ := auth.FromContext(derived); got.KeyID != "k1" {
		t.Error("the derived state lost the identity")
	}
}

type parentKey struct{}

// A reqstate.Context answers the lookups as With's context does: its State for every owner
// package's lookup, the parent's values for any other key, and the parent's cancellation, which
// reaches the contexts derived from it.
func TestContextIsWithInPlace(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), parentKey{}, "parent's"))
	id := auth.Identity{KeyID: "k1"}
	entry := usage.NewEntry("chat")
	c := &reqstate.Context{Context: parent, State: reqstate.State{Identity: &id, Entry: entry, Request: true}}
	if reqstate.From(c) != &c.State {
		t.Fatal("From does not find the Context's own State")
	}
	if s := fmt.Sprint(c); s != fmt.Sprint(parent)+".WithValue(*reqstate.State)" {
		t.Errorf("a Context prints as %s", s)
	}
	if got, _ := auth.FromContext(c); got.KeyID != "k1" || usage.From(c) != entry {
		t.Error("the owner packages' lookups miss the State")
	}
	d := providers.NewDispatch(nil, nil)
	if !providers.SetDispatch(c, d) {
		t.Error("a request's own State in a Context takes its dispatch in place")
	}
	child, stop := context.WithCancel(providers.WithDispatch(c, providers.NewDispatch(nil, nil)))
	defer stop()
	if got, _ := providers.DispatchFrom(c); got != d {
		t.Error("a derived context changed the Context's State")
	}
	if child.Value(parentKey{}) != "parent's" || c.Value(parentKey{}) != "parent's" {
		t.Error("the parent's values are not found")
	}
	if got, _ := auth.FromContext(child); got.KeyID != "k1" {
		t.Error("a derived context lost the identity")
	}
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's cancellation did not reach a context derived from the Context")
	}
	if c.Err() != context.Canceled || child.Err() != context.Canceled {
		t.Errorf("errors %v, %v after the parent's cancellation", c.Err(), child.Err())
	}
}
