package upstream

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/providers"
)

// WithoutCredentials is an answer of u that the gateway passes on as its own (a task read, an
// image edit's images, an image task's query) with u's credentials replaced by Redacted when it
// quotes one, as u.Echoes finds them (as sent, with JSON or percent escapes): in every string and
// member name of a JSON answer, credential-like tokens in those strings too (see RedactJSON); in
// the text of any other answer (an event stream), as written or percent-encoded (see
// RedactSecrets). An answer that quotes none is returned as it is, unread: a provider may echo
// the request's Authorization in a member of its own, or a result URL may carry the key.
func WithoutCredentials(u *providers.Upstream, body []byte) []byte {
	if u == nil || !u.Echoes(body) {
		return body
	}
	secrets := u.Credentials()
	if json.Valid(body) {
		redacted, _ := RedactJSON(body, secrets...)
		return redacted
	}
	return []byte(RedactSecrets(string(body), secrets...))
}
