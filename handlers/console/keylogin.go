package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"strings"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// KeyAuthenticator checks an API key as the gateway's mediagw_auth does (auth.Authenticator):
// unknown, disabled and expired keys, disabled accounts and the key's allowed addresses.
type KeyAuthenticator interface {
	AuthenticateKey(ctx context.Context, secret string, clientIP netip.Addr) (auth.Identity, error)
}

// keyUserPrefix starts the session cookie's user part for a member who logged in with an API
// key: "~" is not in the base64url alphabet that encodes configured user names, so the two
// never meet.
const keyUserPrefix = "~"

// keyUser is the console user of a session that logged in with API key id of account, whose
// secret's stored hash is hash (storage.HashSecret). Its name is not a configured user's
// (configured names have no colon). The hash stands in the password hash's place in the
// session's credential digest (credentialDigest): a new secret under the same id (a configured
// key rotated in the Caddyfile) ends the sessions made with the old one.
func keyUser(id, account, hash string) User {
	return User{Name: keyUserName(id), Account: account, KeyID: id, PasswordHash: []byte(hash)}
}

// keyUserName is the user name of a session made with key id.
func keyUserName(id string) string { return "key:" + id }

// keyLogin logs a member in with one of their account's API keys. The key itself is checked
// once, here, as mediagw_auth checks it (its allow_ips against every address a trusted proxy
// forwarded, too), and kept nowhere: the session cookie and the store's lease name the key's id,
// and every later request checks that this key is still active (keyStillValid). Attempts are
// counted in the same windows as password logins: per client address and per key (by digest).
func (h *Handler) keyLogin(w http.ResponseWriter, r *http.Request, secret string) {
	secret = strings.TrimSpace(secret)
	sum := sha256.Sum256([]byte(secret))
	if !h.allowLoginAttempt(w, r, "console/login/key/"+hex.EncodeToString(sum[:16]), "") {
		return
	}
	refuse := func(reason string) {
		h.Logger.Info("console key login failed", zap.String("reason", reason), zap.String("remote_ip", h.clientIP(r)))
		h.renderLogin(w, r, http.StatusUnauthorized, "This API key cannot log in to the console.")
	}
	if h.KeyAuth == nil {
		refuse("key_login_off")
		return
	}
	ip, err := netip.ParseAddr(h.clientIP(r))
	if err != nil {
		ip = netip.Addr{} // a key with allowed addresses then refuses it
	}
	id, err := h.KeyAuth.AuthenticateKey(r.Context(), secret, ip)
	if err == nil && len(id.AllowIPs) > 0 && h.ForwardedAllowed != nil && !h.ForwardedAllowed(r, id) {
		err = auth.ErrIPNotAllowed
	}
	if ae, ok := errors.AsType[*apierror.Error](err); ok {
		refuse(ae.Code)
		return
	} else if err != nil {
		h.Logger.Error("checking an API key for a console login", zap.Error(err))
		h.renderLogin(w, r, http.StatusServiceUnavailable, "The console cannot log you in right now. Try again shortly.")
		return
	}
	if id.Account == "" {
		refuse("key_without_account") // a console user without an account is an operator
		return
	}
	h.startSession(w, r, keyUser(id.KeyID, id.Account, storage.HashSecret(secret)))
}

// keySession returns the user of a key session's cookie (user part "~" + the key id,
// base64url); found is false when the key is gone (revoked, or a configured key no longer in
// the configuration), err a failure to read it. active reports whether the key is still active
// for this request: it is enabled and unexpired, belongs to an account (without one it would be
// an operator), and its allow_ips allow the request's client (keyAllowsClient). The account's
// own state is checked with every member's (accountOpen): revoking, disabling or expiring the
// key, or disabling its account, ends the session, and its cookie is of no use from an address
// the key may not be used from. The user carries the hash of the key's present secret, so a
// session made with another secret under this id no longer matches (keyUser, credentialDigest).
func (h *Handler) keySession(r *http.Request, id string) (user User, found, active bool, err error) {
	k, hash, err := h.Keys.KeyWithHash(r.Context(), id)
	if ke, ok := errors.AsType[*keyadmin.Error](err); ok && ke.Status == http.StatusNotFound {
		return User{}, false, false, nil
	} else if err != nil {
		return User{}, false, false, err
	}
	active = !k.Disabled && (k.Expires == nil || h.now().Before(*k.Expires)) && k.Account != "" && h.keyAllowsClient(r, k)
	user = keyUser(k.ID, k.Account, hash)
	user.Key = &k
	return user, true, active, nil
}

// keyAllowsClient reports whether the key's allow_ips allow the request's client address, and
// every forwarded address behind a lenient trusted proxy (ForwardedAllowed), as the key login
// and mediagw_auth require.
func (h *Handler) keyAllowsClient(r *http.Request, k keyadmin.KeyView) bool {
	if len(k.AllowIPs) == 0 {
		return true
	}
	id := auth.Identity{KeyID: k.ID, Account: k.Account}
	for _, s := range k.AllowIPs {
		p, err := auth.ParseIPRange(s)
		if err != nil {
			return false // the admin API stores only ranges it parsed: refuse what it cannot read
		}
		id.AllowIPs = append(id.AllowIPs, p)
	}
	ip, err := netip.ParseAddr(h.clientIP(r))
	if err != nil || !id.AllowsAddr(ip) {
		return false
	}
	return h.ForwardedAllowed == nil || h.ForwardedAllowed(r, id)
}

// accountOpen reports whether the members of account may use the console: the account is not
// disabled, in the configuration (disabled_accounts) or through the admin API or the console.
// An operator (no account) always may. err is a failure to read the account's record.
func (h *Handler) accountOpen(ctx context.Context, account string) (bool, error) {
	if account == "" {
		return true, nil
	}
	if h.Keys != nil && h.Keys.DisabledAccounts[account] {
		return false, nil
	}
	a, err := h.Store.Account(ctx, account)
	if errors.Is(err, storage.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return !a.Disabled, nil
}
