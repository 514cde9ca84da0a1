package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// loginCookieName holds the login form's pre-session token. The __Host- prefix makes browsers
// refuse it unless it is Secure, has Path / and no Domain, so a sibling subdomain cannot plant
// one; SameSite=Strict keeps it off requests that other sites start.
const loginCookieName = "__Host-mediagw_login"

// loginTokenAge is how long a login form stays usable.
const loginTokenAge = time.Hour

// loginCSRF is the token the login form carries for the pre-session token in its cookie: an
// HMAC of it, so only a page served with that cookie knows it.
func loginCSRF(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("mediagw console login csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// loginToken returns the request's pre-session token, or a new one set in a cookie. A login
// POST must carry loginCSRF of it (login CSRF: a form posted by another site, or one replayed
// without the cookie it was served with, would log the victim's browser in to the attacker's
// session).
func loginToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCookieName); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	var random [32]byte
	rand.Read(random[:]) // crypto/rand.Read never fails (it panics instead, from Go 1.24)
	token := base64.RawURLEncoding.EncodeToString(random[:])
	http.SetCookie(w, &http.Cookie{Name: loginCookieName, Value: token, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(loginTokenAge.Seconds())})
	return token
}

// validLoginCSRF reports whether a login POST carries the token of its pre-session cookie.
func validLoginCSRF(r *http.Request) bool {
	c, err := r.Cookie(loginCookieName)
	got := r.PostFormValue("csrf")
	return err == nil && len(c.Value) == 43 && got != "" && hmac.Equal([]byte(got), []byte(loginCSRF(c.Value)))
}

// renderLogin shows the login form (with status and an error, if any), carrying the token of
// the request's pre-session cookie, which it sets when the request has none.
func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, status, "login", page{Title: "Log in", Error: msg, CSRF: loginCSRF(loginToken(w, r))})
}

// clearLoginCookie ends the pre-session token once a session starts.
func clearLoginCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: loginCookieName, Value: "", Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}
