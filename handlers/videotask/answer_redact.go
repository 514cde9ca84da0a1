package videotask

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/bounded"
)

// withoutCredentials is an answer of p about its tasks (a task read, a task list) with p's
// credentials replaced by upstream.Redacted in every string of it (escapes decoded;
// credential-like tokens in those strings too, see upstream.RedactJSON) when it quotes one, as
// sent; any other answer is returned as it is, unread. The task API passes an Ark answer's
// members on to clients, callbacks and the store, and a provider may echo the request's
// Authorization in a failed task's message or in a member of its own.
func withoutCredentials(p *providers.Upstream, body []byte) []byte {
	return upstream.WithoutCredentials(p, body)
}

// withoutCredentialsIn is an adaptor's state with the provider's texts that become a failed
// task's error (code, message, the provider's own state name) redacted as a refusal's message
// is (adaptor.Refusal): credential-like tokens, and u's credentials as sent (a Kling token, made
// by the gateway, looks like no key). A success's result URL that carries one of u's
// credentials is served through the owner-only content endpoint instead (see
// withoutCredentialedResults).
func withoutCredentialsIn(st adaptor.State, u *providers.Upstream) adaptor.State {
	if st.Status == adaptor.StatusSucceeded {
		st = withoutCredentialedResults(st, u.Credentials())
	}
	if st.Status != adaptor.StatusFailed && st.Status != adaptor.StatusUnknown && st.ErrorMessage == "" {
		return st // a known state's name, and no text of the provider's
	}
	secrets := u.Credentials()
	st.ErrorCode = upstream.RedactSecrets(st.ErrorCode, secrets...)
	st.ErrorMessage = upstream.RedactSecrets(st.ErrorMessage, secrets...)
	st.ProviderStatus = upstream.RedactSecrets(st.ProviderStatus, secrets...)
	return st
}

// redactedFailure is a failed task's error object (failure) with credential-like tokens in its
// message and code replaced, as in a refusal's message (see upstream.RedactSecrets), and the
// gateway's callback relay tokens too (withoutRelayTokens), and both then cut to
// MaxFailureMessage and MaxFailureCode (cutText); an error without any such token, and within
// the bounds, is returned as it is. Every failed task's error, of an Ark answer or an adaptor's
// state, is built here once, for the stored answer that the query, the list and callbacks send.
func redactedFailure(e json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(e, &members) != nil {
		return e
	}
	changed := false
	for _, name := range []string{"message", "code"} {
		var s string
		if json.Unmarshal(members[name], &s) != nil {
			continue
		}
		limit := MaxFailureMessage
		if name == "code" {
			limit = MaxFailureCode
		}
		if r := bounded.Text(withoutRelayTokens(upstream.RedactSecrets(s)), limit); r != s {
			members[name], changed = mustJSON(r), true
		}
	}
	if !changed {
		return e
	}
	return mustJSON(members)
}
