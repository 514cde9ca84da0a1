// Package auth turns an API key into an identity and decides whether that identity may use a
// model. It knows nothing of Caddy: the caddymodule handler supplies the client address and
// carries the identity to the handlers that follow.
package auth

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mediagw/mediagw/internal/reqstate"
	"github.com/mediagw/mediagw/storage"
)

// Identity is who made a request: the key (by its public id, never its secret) and the account
// that owns it.
type Identity struct {
	KeyID   string
	Account string
	// Models are the key's model patterns; empty allows every model.
	Models []string
	// Limits are the key's quota, rate and active-task limits.
	Limits storage.Limits
	// AllowIPs are the key's allowed client address ranges; empty allows any address.
	AllowIPs []netip.Prefix
}

// AllowsAddr reports whether the key may be used from addr (see AllowIPs).
func (id Identity) AllowsAddr(addr netip.Addr) bool { return ipAllowed(id.AllowIPs, addr) }

// AllowsModel reports whether the key's patterns allow the model.
func (id Identity) AllowsModel(model string) bool {
	if len(id.Models) == 0 {
		return true
	}
	for _, p := range id.Models {
		if MatchModel(p, model) {
			return true
		}
	}
	return false
}

// Sees reports whether the key may see or change a task (or another upstream object) of account
// made with model: one of its own account's, of a model the key may use. A key restricted to some
// models sees nothing of its account's work with the others, whichever key made it: a read, a
// list, a cancel, a content download or a replayed create of such a task is answered as for a
// task that does not exist. A record that names no model is the account's alone.
func (id Identity) Sees(account, model string) bool {
	return account == id.Account && (model == "" || id.AllowsModel(model))
}

// ModelFilter is the filter of a task list for the key (storage.TaskQuery.ModelAllowed): nil
// for a key that may use every model, so that its lists read as the account's.
func (id Identity) ModelFilter() func(model string) bool {
	if len(id.Models) == 0 {
		return nil
	}
	return id.AllowsModel
}

// MatchModel reports whether a model id matches a glob pattern, in which '*' stands for any run of
// characters (slashes included) and '?' for one byte. It runs in O(len(pattern)·len(model)).
func MatchModel(pattern, model string) bool {
	p, m := 0, 0
	star, resume := -1, 0 // position after the last '*', and where its run would resume in model
	for m < len(model) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, resume = p+1, m
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == model[m]):
			p++
			m++
		case star >= 0:
			resume++
			p, m = star, resume
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// WithIdentity returns a context that carries the identity. (mediagw_auth puts the identity in
// the request's state with the rest of it, see reqstate.)
func WithIdentity(ctx context.Context, id Identity) context.Context {
	s := reqstate.Derive(ctx)
	s.Identity = &id
	return reqstate.With(ctx, s)
}

// FromContext returns the identity that mediagw_auth established for the request.
func FromContext(ctx context.Context) (Identity, bool) {
	s := reqstate.From(ctx)
	if s == nil {
		return Identity{}, false
	}
	id, ok := s.Identity.(*Identity)
	if !ok || id == nil {
		return Identity{}, false
	}
	return *id, true
}

// ParseIPRange parses an address or a CIDR range; a single address becomes a /32 or /128. An
// IPv4-mapped IPv6 address or range (::ffff:10.0.0.0/104) becomes the IPv4 one it carries, as
// client addresses are compared unmapped.
func ParseIPRange(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR range %q", s)
		}
		return unmapPrefix(p.Masked()), nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid IP address %q", s)
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// unmapPrefix returns an IPv4-mapped IPv6 range of /96 or longer as the IPv4 range it carries;
// any other range as it is.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() || p.Bits() < 96 {
		return p
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
}
