// Package reqstate carries a request's gateway state (the caller's identity, the usage entry,
// the provider dispatch) in one context value, so that a request's handlers derive one context
// (and one copy of the http.Request) for all of it instead of one for each, and every later
// lookup of any context value walks one link fewer for each. mediagw_auth sets a request's State
// up; the packages that own each part read it through their lookups (auth.FromContext,
// usage.From, providers.DispatchFrom) and derive contexts with their With functions, which
// every other reader and writer should use.
package reqstate

import (
	"context"
	"fmt"
)

// State is one request's gateway state. Each field holds a pointer of its owner package's type
// (*auth.Identity, *usage.Entry, *providers.Dispatch), or nil when it is not known (yet).
//
// Concurrency: a State is written only by the goroutine that serves the request, and each field
// once, before the handlers that read it run; after that it is never changed. Goroutines that a
// handler starts (reverse_proxy's transport, a hold's renewal) may read the fields that were set
// before they started, without a lock. Derive, and the With functions of the owner packages,
// copy every field, so they too run on the request's goroutine. A State that is not a request's
// own (Request false: one that Derive made, for a context that may serve more than one request)
// is never changed after it is put in a context.
type State struct {
	Identity any // *auth.Identity
	Entry    any // *usage.Entry
	Dispatch any // *providers.Dispatch
	// Request marks the State of one request, which mediagw_auth set up for it alone: a later
	// handler of the same request may set a field it lacks in place, before the handlers that read
	// it run (see providers.SetDispatch). Any other State is copied to be changed (Derive).
	Request bool
}

type key struct{}

// From returns the State of ctx, or nil.
func From(ctx context.Context) *State {
	s, _ := ctx.Value(key{}).(*State)
	return s
}

// With returns ctx carrying s, which replaces any State of ctx.
func With(ctx context.Context, s *State) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// Context is a context carrying a State, as With makes one, for a handler that keeps it in an
// allocation of its own: mediagw_auth keeps a request's in its observed writer, which saves the
// request an allocation. Its parent is the embedded Context, which answers every other key, and
// its Done, Err and Deadline. Use a pointer to it as the context; set it up before it is used, and
// never change it afterwards but as State's rules allow.
type Context struct {
	context.Context
	State State
}

// Value is c's State (a *State) for the key of From, and the parent's value for any other key.
func (c *Context) Value(k any) any {
	if _, ok := k.(key); ok {
		return &c.State
	}
	return c.Context.Value(k)
}

// String names c much as With's context names itself (which also names its key): its parent,
// then the type of its value, never the value (a caller's identity).
func (c *Context) String() string { return fmt.Sprint(c.Context) + ".WithValue(*reqstate.State)" }

// Derive returns a new State with the fields of ctx's State (none when it has none), to be
// changed and put in a context derived from ctx with With: ctx's own State stays as it was.
func Derive(ctx context.Context) *State {
	s := new(State)
	if old := From(ctx); old != nil {
		*s = *old
		s.Request = false
	}
	return s
}
