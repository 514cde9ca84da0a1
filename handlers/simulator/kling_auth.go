package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// klingAuthorized checks a Kling request's credential as Kling does: Authorization: Bearer <JWT>,
// an HS256 token whose iss is KlingAccessKey, signed with KlingSecretKey, valid now (nbf not
// after now, exp after it). It answers the refusal itself and reports false. Without
// KlingAccessKey the simulator serves no Kling request.
func (s *Simulator) klingAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if s.KlingAccessKey == "" {
		klingError(w, http.StatusUnauthorized, 1000, "the simulator has no kling_keys: Kling requests are not served")
		return false
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	parts := strings.Split(token, ".")
	if !ok || len(parts) != 3 {
		klingError(w, http.StatusUnauthorized, 1001, "Authorization is empty or not a JWT")
		return false
	}
	mac := hmac.New(sha256.New, []byte(s.KlingSecretKey))
	mac.Write([]byte(parts[0] + "." + parts[1])) // a hash.Hash's Write never fails
	sig, errSig := base64.RawURLEncoding.DecodeString(parts[2])
	header, errHeader := base64.RawURLEncoding.DecodeString(parts[0])
	payload, errPayload := base64.RawURLEncoding.DecodeString(parts[1])
	var h struct{ Alg string }
	var claims struct {
		Iss      string
		Exp, Nbf int64
	}
	if errSig != nil || errHeader != nil || errPayload != nil || json.Unmarshal(header, &h) != nil || h.Alg != "HS256" ||
		json.Unmarshal(payload, &claims) != nil || !hmac.Equal(sig, mac.Sum(nil)) || claims.Iss != s.KlingAccessKey {
		klingError(w, http.StatusUnauthorized, 1002, "Authorization is invalid")
		return false
	}
	if now := s.now(); claims.Nbf > now.Unix() || claims.Exp <= now.Unix() {
		klingError(w, http.StatusUnauthorized, 1004, "Authorization has expired or is not yet valid at "+now.UTC().Format(time.RFC3339))
		return false
	}
	return true
}

// isKling reports a path of the Kling protocol.
func isKling(path string) bool {
	return strings.Contains(path, "/videos/text2video") || strings.Contains(path, "/videos/image2video")
}
