package providers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"
)

// AuthKlingJWT is the auth style of Kling's API: a short-lived JWT (HS256) made from an access
// key (its iss claim) and signed with a secret key, sent as Authorization: Bearer <token>.
const AuthKlingJWT = "kling-jwt"

// Lifetimes of a Kling token: it is valid for jwtLifetime from jwtSkew before it was made (for
// clocks behind ours), and a new one is made once less than jwtRenewBefore is left.
const (
	jwtLifetime    = 30 * time.Minute
	jwtSkew        = 5 * time.Second
	jwtRenewBefore = 5 * time.Minute
)

// jwtSource makes and keeps the current token of one access key. Its clock is a field, set by
// tests.
type jwtSource struct {
	accessKey, secretKey string
	now                  func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
	// previous is the token that token replaced: a call made with it may still be answered.
	previous string
}

// current is a token with at least jwtRenewBefore left, made anew when the kept one has less.
func (s *jwtSource) current() string {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.expires.Sub(now) > jwtRenewBefore {
		return s.token
	}
	s.expires, s.previous = now.Add(jwtLifetime), s.token
	s.token = signJWT(s.accessKey, s.secretKey, now.Add(-jwtSkew).Unix(), s.expires.Unix())
	return s.token
}

// tokens are the kept token and the one it replaced (each "" until made), without making one.
func (s *jwtSource) tokens() (current, previous string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.previous
}

// jwtHeader is the token's header, {"alg":"HS256","typ":"JWT"}, base64url-encoded.
var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// signJWT makes the HS256 token {"iss":accessKey,"exp":exp,"nbf":nbf} signed with secretKey.
func signJWT(accessKey, secretKey string, nbf, exp int64) string {
	claims, _ := json.Marshal(struct { // a string and two integers always encode
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
		Nbf int64  `json:"nbf"`
	}{accessKey, exp, nbf})
	signed := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(secretKey))
	mac.Write([]byte(signed)) // a hash.Hash never fails to write
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
