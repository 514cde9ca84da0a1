package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/mediagw/mediagw/storage"
)

// cookieName is the session cookie: HttpOnly, Secure, SameSite=Strict, path /. Its __Host-
// prefix makes browsers refuse it unless it is Secure, has Path / and no Domain, so a page on a
// sibling subdomain cannot write one for the parent domain and put the browser in the
// attacker's session (cookie tossing, login CSRF by another way in).
const cookieName = "__Host-mediagw_console"

// Login attempts allowed per client address and per user name in loginWindow.
const (
	loginAttempts = 10
	loginWindow   = 5 * time.Minute
)

// session is a logged-in user. Its token is random (256 bits) and known only to the browser's
// cookie; the store keeps a lease named after the token's SHA-256 and owned by the user's name,
// the login time and the digest of the user's credential at login (see leaseOwner), so a cookie
// naming another user, login time or credential is no session.
type session struct {
	user  User
	token string
	since time.Time
	// owner is the owner of the session's lease (leaseOwner).
	owner string
}

// leaseName is the store lease that keeps the session of token.
func leaseName(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "console/session/" + hex.EncodeToString(sum[:])
}

// credentialDigest is a short digest of a user's credential as configured: the password hash
// (a key session's: the stored hash of its key's secret) and the account. The session cookie
// carries it, so that a session whose credential changed or went away can still name its lease
// and end it for good: the credential restored later (the same password hash, the same key
// secret) does not bring the old cookie back. It tells nothing of the password or the key.
func credentialDigest(u User) string {
	sum := sha256.Sum256([]byte(string(u.PasswordHash) + "\x00" + u.Account))
	return hex.EncodeToString(sum[:8])
}

// leaseOwner is the owner of a session's lease: the user's name, the login time and the
// credential's digest at login (credentialDigest). A new password or account for the user in
// the configuration so ends their sessions.
func leaseOwner(name string, since time.Time, digest string) string {
	return name + "|" + strconv.FormatInt(since.Unix(), 10) + "|" + digest
}

// csrf is the token every form of this session carries: an HMAC of the session token, so it is
// known only to pages served to this session.
func (s *session) csrf() string {
	m := hmac.New(sha256.New, []byte(s.token))
	m.Write([]byte("mediagw console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *session) validCSRF(got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf()))
}

// session returns the request's session, renewing its idle time, or false when there is none
// (no cookie, a forged or ended one, or one past SessionMax). Every request checks again that
// the session's user may still be here: a configured user still configured with the
// credential of the login (credentialDigest), a key still there with the secret of the login,
// active and allowing the client's address (keySession), an account not disabled
// (accountOpen). A session that fails those checks is ended for good (its lease is released),
// so enabling the key or the account again, or configuring the removed user or key again with
// the same password or secret, does not bring an old cookie back.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) (*session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil, false
	}
	// The cookie is token.user.since.digest, user base64url-encoded (see startSession).
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 || len(parts[0]) != 43 || len(parts[3]) != 16 {
		return nil, false
	}
	token, userPart, digest := parts[0], parts[1], parts[3]
	secs, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return nil, false
	}
	since := time.Unix(secs, 0)
	now := h.now()
	if now.Sub(since) > h.SessionMax || since.After(now.Add(time.Minute)) {
		return nil, false
	}
	encoded, isKey := strings.CutPrefix(userPart, keyUserPrefix)
	decoded, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(decoded) == 0 {
		return nil, false
	}
	name := string(decoded)
	if isKey {
		name = keyUserName(name)
	}
	owner := leaseOwner(name, since, digest)
	err = h.Store.RenewLease(r.Context(), leaseName(token), owner, now, h.SessionIdle)
	if err != nil {
		if !errors.Is(err, storage.ErrLeaseLost) {
			h.Logger.Error("reading a console session", zap.Error(err))
		}
		clearCookie(w)
		return nil, false
	}
	// The lease is this cookie's (RenewLease just proved it): see whether its user may still
	// be here, and end it for good, on every instance, when not.
	user, found, active := User{}, false, true
	if isKey {
		if user, found, active, err = h.keySession(r, string(decoded)); err != nil {
			h.Logger.Error("reading the key of a console session", zap.String("key_id", string(decoded)), zap.Error(err))
			return nil, false
		}
	} else {
		user, found = h.Users[name]
	}
	reason := ""
	switch {
	case !found:
		reason = "its user or key is no longer configured"
	case credentialDigest(user) != digest:
		reason = "its password, key secret or account changed"
	case !active:
		reason = "its key may no longer be used from here"
	default:
		open, err := h.accountOpen(r.Context(), user.Account)
		if err != nil {
			h.Logger.Error("reading the account of a console session", zap.String("user", user.Name), zap.Error(err))
			return nil, false
		}
		if !open {
			reason = "its account is disabled"
		}
	}
	if reason != "" {
		if err := h.Store.ReleaseLease(r.Context(), leaseName(token), owner); err != nil {
			h.Logger.Error("ending a console session", zap.Error(err))
		}
		h.Logger.Info("console session ended", zap.String("reason", reason), zap.String("user", name),
			zap.String("user_account", user.Account), zap.String("remote_ip", h.clientIP(r)))
		clearCookie(w)
		return nil, false
	}
	return &session{user: user, token: token, since: since, owner: owner}, true
}

// serveLogin shows the login form, and logs in with a POST of it.
func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.renderLogin(w, r, http.StatusOK, "")
	case http.MethodPost:
		h.login(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		h.renderLogin(w, r, http.StatusMethodNotAllowed, "Use the form to log in.")
	}
}

// refusalHashes makes the hashes that refused logins are compared against, one of a random
// password at each bcrypt cost from the cheapest user's to the costliest's (bcrypt's time doubles
// with each step of cost). A name that is no user is compared against the costliest; a wrong
// password of a user of cost c is compared against those of costs c to the costliest less one
// besides its own hash, which together take as long (T(c) + T(c) + T(c+1) + … + T(max-1) =
// T(max)). So every refusal takes about the costliest hash's time, and a right password only its
// own hash's.
func refusalHashes(users map[string]User) (map[int][]byte, error) {
	lo, hi := bcrypt.MaxCost, bcrypt.MinCost
	for _, u := range users {
		if c, err := bcrypt.Cost(u.PasswordHash); err == nil {
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	lo = min(lo, hi)
	hashes := make(map[int][]byte, hi-lo+1)
	for cost := lo; cost <= hi; cost++ {
		hash, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), cost)
		if err != nil {
			return nil, err
		}
		hashes[cost] = hash
	}
	return hashes, nil
}

// passwordRight compares password with user's hash (known: the name is a user), and on a
// refusal pads the work to the costliest hash's (see refusalHashes).
func (h *Handler) passwordRight(user User, known bool, password string) bool {
	costliest := bcrypt.MinCost
	for c := range h.refusalHashes {
		costliest = max(costliest, c)
	}
	from := costliest
	if known {
		if bcrypt.CompareHashAndPassword(user.PasswordHash, []byte(password)) == nil {
			return true
		}
		if c, err := bcrypt.Cost(user.PasswordHash); err == nil {
			from = c
		}
	}
	to := costliest
	if known {
		to-- // the user's own hash took the place of the costliest
	}
	for c := from; c <= to; c++ {
		if hash := h.refusalHashes[c]; hash != nil {
			// Compared only for its time: the password is random, nobody's.
			_ = bcrypt.CompareHashAndPassword(hash, []byte(password))
		}
	}
	return false
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if msg := strictRequest(r); msg != "" {
		h.renderLogin(w, r, http.StatusBadRequest, msg)
		return
	}
	if !validLoginCSRF(r) {
		h.Logger.Info("console login refused: no login form token", zap.String("remote_ip", h.clientIP(r)))
		h.renderLogin(w, r, http.StatusForbidden, "This login form has expired or did not come from the console's own page. Try again.")
		return
	}
	if key := r.PostFormValue("api_key"); key != "" {
		h.keyLogin(w, r, key)
		return
	}
	name, password := r.PostFormValue("username"), r.PostFormValue("password")
	if !h.allowLoginAttempt(w, r, userWindow(name), name) {
		return
	}
	user, known := h.Users[name]
	if !h.passwordRight(user, known, password) {
		h.Logger.Info("console login failed", zap.String("user", name), zap.String("remote_ip", h.clientIP(r)))
		h.renderLogin(w, r, http.StatusUnauthorized, "The user name or password is wrong.")
		return
	}
	// The password was right: saying that the account is disabled tells its member only.
	if open, err := h.accountOpen(r.Context(), user.Account); err != nil {
		h.Logger.Error("reading the account of a console login", zap.String("user", name), zap.Error(err))
		h.renderLogin(w, r, http.StatusServiceUnavailable, "The console cannot log you in right now. Try again shortly.")
		return
	} else if !open {
		h.Logger.Info("console login refused: the account is disabled", zap.String("user", name), zap.String("user_account", user.Account))
		h.renderLogin(w, r, http.StatusForbidden, "Your account is disabled. Ask your operator to enable it.")
		return
	}
	h.startSession(w, r, user)
}

// allowLoginAttempt counts a login attempt in the client address's window and in window (the
// user name's, or the API key's), and answers 429 with Retry-After when either is full. name is
// logged with a refusal (a user name; "" for a key, which is never logged).
func (h *Handler) allowLoginAttempt(w http.ResponseWriter, r *http.Request, window, name string) bool {
	now := h.now()
	for _, window := range []string{addressWindow(h.clientIP(r)), window} {
		ok, retry, err := h.Store.AllowRate(r.Context(), window, loginAttempts, loginWindow, now)
		if err != nil {
			h.Logger.Error("counting a console login attempt", zap.Error(err))
			h.renderLogin(w, r, http.StatusServiceUnavailable, "The console cannot log you in right now. Try again shortly.")
			return false
		}
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			h.Logger.Warn("console login refused: too many attempts", zap.String("user", name), zap.String("remote_ip", h.clientIP(r)))
			h.renderLogin(w, r, http.StatusTooManyRequests, "Too many login attempts. Wait a few minutes and try again.")
			return false
		}
	}
	return true
}

// startSession starts a session of user and sets its cookie: token.user.since.digest, where
// user is the configured user's name (base64url), or "~" and the key id (base64url) of a member
// who logged in with an API key, and digest is the user's credentialDigest.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, user User) {
	var random [32]byte
	rand.Read(random[:]) // crypto/rand.Read never fails (it panics instead, from Go 1.24)
	token := base64.RawURLEncoding.EncodeToString(random[:])
	now := h.now()
	since := now.Truncate(time.Second)
	digest := credentialDigest(user)
	held, err := h.Store.AcquireLease(r.Context(), leaseName(token), leaseOwner(user.Name, since, digest), now, h.SessionIdle)
	if err != nil || !held {
		h.Logger.Error("starting a console session", zap.Bool("held", held), zap.Error(err))
		h.renderLogin(w, r, http.StatusServiceUnavailable, "The console cannot log you in right now. Try again shortly.")
		return
	}
	userPart := base64.RawURLEncoding.EncodeToString([]byte(user.Name))
	if user.KeyID != "" {
		userPart = keyUserPrefix + base64.RawURLEncoding.EncodeToString([]byte(user.KeyID))
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token + "." + userPart + "." + strconv.FormatInt(since.Unix(), 10) + "." + digest,
		Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode, MaxAge: int(h.SessionMax.Seconds()),
	})
	clearLoginCookie(w)
	h.Logger.Info("console login", zap.String("user", user.Name), zap.String("user_account", user.Account), zap.String("remote_ip", h.clientIP(r)))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if err := h.Store.ReleaseLease(r.Context(), leaseName(s.token), s.owner); err != nil {
		h.Logger.Error("ending a console session", zap.Error(err))
		h.fail(w, r, s, http.StatusServiceUnavailable, "The session could not be ended. Try again.")
		return
	}
	clearCookie(w)
	h.Logger.Info("console logout", zap.String("user", s.user.Name))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// addressWindow is the login rate window of a client address: an IPv6 address counts with its
// /64, which one client holds whole.
func addressWindow(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is6() {
		if p, err := a.Prefix(64); err == nil {
			ip = p.String()
		}
	}
	return "console/login/ip/" + ip
}

// userWindow is the login rate window of a user name, named by its digest so that a name of
// any length makes a short store key.
func userWindow(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "console/login/user/" + hex.EncodeToString(sum[:16])
}

// clientIP is the client's address: ClientIP's answer, else the connection's.
func (h *Handler) clientIP(r *http.Request) string {
	if h.ClientIP != nil {
		if ip := h.ClientIP(r); ip != "" {
			return ip
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
