package auth

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// Failures a client can get from authentication.
var (
	ErrMissingKey      = apierror.New(http.StatusUnauthorized, "missing_api_key", "missing API key: send Authorization: Bearer <key>")
	ErrMalformedKey    = apierror.New(http.StatusUnauthorized, "invalid_api_key", "malformed Authorization header: expected Bearer <key>")
	ErrUnknownKey      = apierror.New(http.StatusUnauthorized, "invalid_api_key", "invalid API key")
	ErrKeyDisabled     = apierror.New(http.StatusForbidden, "key_disabled", "this API key is disabled")
	ErrKeyExpired      = apierror.New(http.StatusForbidden, "key_expired", "this API key has expired")
	ErrAccountDisabled = apierror.New(http.StatusForbidden, "account_disabled", "the account of this API key is disabled")
	ErrIPNotAllowed    = apierror.New(http.StatusForbidden, "ip_not_allowed", "this API key may not be used from this address")
)

// Authenticator resolves API keys. Static keys (from the configuration) are held in memory by
// hash; other keys are looked up in the store.
type Authenticator struct {
	// Static maps the SHA-256 (hex) of each configured secret to its key. It is not changed once
	// the Authenticator is in use: each key's Caller is made once, at the first request.
	Static map[string]storage.APIKey
	// DisabledAccounts are accounts refused by configuration.
	DisabledAccounts map[string]bool
	// Store holds keys and account records managed at run time; may be nil.
	Store storage.Store
	// Now is the clock against which keys expire. Default: time.Now.
	Now func() time.Time

	staticOnce sync.Once
	static     map[string]*staticKey // Static's keys with their identities (see staticKeys)
}

// staticKey is a configured key with its caller, made once for all of its requests.
type staticKey struct {
	key    storage.APIKey
	caller Caller
}

// Caller is the identity of a request's caller (see AuthenticateShared), with its key id and
// account as the values of the request's placeholders ({http.auth.user.id}, {mediagw.account}):
// made once with the identity, where a string set as a placeholder would be boxed anew for each
// request.
type Caller struct {
	Identity
	KeyIDValue, AccountValue any
}

// callerOf is the caller of a request made with key.
func callerOf(key storage.APIKey) Caller {
	c := Caller{Identity: identityOf(key)}
	c.KeyIDValue, c.AccountValue = c.KeyID, c.Account
	return c
}

// staticKeys are the configured keys with their identities, made at the first call.
func (a *Authenticator) staticKeys() map[string]*staticKey {
	a.staticOnce.Do(func() {
		a.static = make(map[string]*staticKey, len(a.Static))
		for hash, key := range a.Static {
			a.static[hash] = &staticKey{key: key, caller: callerOf(key)}
		}
	})
	return a.static
}

// identityOf is the identity of a request made with key. It shares the key's slices.
func identityOf(key storage.APIKey) Identity {
	return Identity{KeyID: key.ID, Account: key.Account, Models: key.Models, Limits: key.Limits, AllowIPs: key.AllowIPs}
}

// now reads the authenticator's clock.
func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Authenticate checks the Authorization header value and the client address. A refusal is an
// *apierror.Error with status 401 or 403; any other error is an internal failure.
func (a *Authenticator) Authenticate(ctx context.Context, authorization string, clientIP netip.Addr) (Identity, error) {
	secret, err := bearerToken(authorization)
	if err != nil {
		return Identity{}, err
	}
	return a.AuthenticateKey(ctx, secret, clientIP)
}

// AuthenticateKey checks an API key (see KeyFromRequest) and the client address, as
// Authenticate does.
func (a *Authenticator) AuthenticateKey(ctx context.Context, secret string, clientIP netip.Addr) (Identity, error) {
	var stored storage.APIKey
	shared, err := a.check(ctx, secret, clientIP, &stored)
	if err != nil {
		return Identity{}, err
	}
	if shared != nil {
		return shared.Identity, nil
	}
	return identityOf(stored), nil
}

// AuthenticateShared is AuthenticateKey with the caller by reference: for a configured key the
// one made at its first request and shared by all of them, for a stored key a new one. Nothing
// may change it.
func (a *Authenticator) AuthenticateShared(ctx context.Context, secret string, clientIP netip.Addr) (*Caller, error) {
	var stored storage.APIKey
	shared, err := a.check(ctx, secret, clientIP, &stored)
	if err != nil {
		return nil, err
	}
	if shared == nil {
		c := callerOf(stored)
		shared = &c
	}
	return shared, nil
}

// check checks an API key and the client address. It returns a static key's caller; a stored key
// is read into stored, the caller's (on its stack: no key is copied more than once).
func (a *Authenticator) check(ctx context.Context, secret string, clientIP netip.Addr, stored *storage.APIKey) (*Caller, error) {
	if secret == "" {
		return nil, ErrMissingKey
	}
	key, shared, err := a.lookup(ctx, secret, stored)
	if err != nil {
		return nil, err
	}
	if key.Disabled {
		return nil, ErrKeyDisabled
	}
	if !key.ExpiresAt.IsZero() && !a.now().Before(key.ExpiresAt) {
		return nil, ErrKeyExpired
	}
	if disabled, err := a.accountDisabled(ctx, key.Account); err != nil {
		return nil, err
	} else if disabled {
		return nil, ErrAccountDisabled
	}
	if !ipAllowed(key.AllowIPs, clientIP) {
		return nil, ErrIPNotAllowed
	}
	return shared, nil
}

// lookup finds the key of secret by its hash (storage.SecretHash, made on the stack): a static
// key, with its caller, costs no allocation; a stored key is read into stored.
func (a *Authenticator) lookup(ctx context.Context, secret string, stored *storage.APIKey) (*storage.APIKey, *Caller, error) {
	hash := storage.SecretHash(secret)
	if k, ok := a.staticKeys()[string(hash[:])]; ok {
		return &k.key, &k.caller, nil
	}
	if a.Store == nil {
		return nil, nil, ErrUnknownKey
	}
	k, err := a.Store.KeyByHash(ctx, string(hash[:]))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, ErrUnknownKey
	}
	if err != nil {
		return nil, nil, err
	}
	*stored = k
	return stored, nil, nil
}

func (a *Authenticator) accountDisabled(ctx context.Context, account string) (bool, error) {
	if a.DisabledAccounts[account] {
		return true, nil
	}
	if a.Store == nil {
		return false, nil
	}
	acct, err := a.Store.Account(ctx, account)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return acct.Disabled, err
}

// bearerToken extracts the secret from "Bearer <secret>" (the scheme is case-insensitive).
func bearerToken(header string) (string, error) {
	if header == "" {
		return "", ErrMissingKey
	}
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", ErrMalformedKey
	}
	return token, nil
}

// ipAllowed reports whether addr is inside one of the prefixes; an empty list allows any address.
func ipAllowed(allow []netip.Prefix, addr netip.Addr) bool {
	if len(allow) == 0 {
		return true
	}
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap().WithZone("")
	// unmapPrefix: a mapped range stored as written (before ParseIPRange unmapped it).
	return slices.ContainsFunc(allow, func(p netip.Prefix) bool { return unmapPrefix(p).Contains(addr) })
}
