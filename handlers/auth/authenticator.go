package auth

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
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
	// Static maps the SHA-256 (hex) of each configured secret to its key.
	Static map[string]storage.APIKey
	// DisabledAccounts are accounts refused by configuration.
	DisabledAccounts map[string]bool
	// Store holds keys and account records managed at run time; may be nil.
	Store storage.Store
	// Now is the clock against which keys expire. Default: time.Now.
	Now func() time.Time
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
	if secret == "" {
		return Identity{}, ErrMissingKey
	}
	key, err := a.lookup(ctx, secret)
	if err != nil {
		return Identity{}, err
	}
	if key.Disabled {
		return Identity{}, ErrKeyDisabled
	}
	if !key.ExpiresAt.IsZero() && !a.now().Before(key.ExpiresAt) {
		return Identity{}, ErrKeyExpired
	}
	if disabled, err := a.accountDisabled(ctx, key.Account); err != nil {
		return Identity{}, err
	} else if disabled {
		return Identity{}, ErrAccountDisabled
	}
	if !ipAllowed(key.AllowIPs, clientIP) {
		return Identity{}, ErrIPNotAllowed
	}
	return Identity{KeyID: key.ID, Account: key.Account, Models: key.Models, Limits: key.Limits, AllowIPs: key.AllowIPs}, nil
}

// lookup finds the key of secret by its hash (storage.SecretHash, made on the stack): a static
// key costs no allocation.
func (a *Authenticator) lookup(ctx context.Context, secret string) (storage.APIKey, error) {
	hash := storage.SecretHash(secret)
	if k, ok := a.Static[string(hash[:])]; ok {
		return k, nil
	}
	if a.Store == nil {
		return storage.APIKey{}, ErrUnknownKey
	}
	k, err := a.Store.KeyByHash(ctx, string(hash[:]))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.APIKey{}, ErrUnknownKey
	}
	return k, err
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
