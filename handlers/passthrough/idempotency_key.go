package passthrough

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// idempotencyKeyHeader is the header by which a client asks a provider to answer a repeated
// request once (the OpenAI and Anthropic SDKs send one on their retries), in canonical form.
const idempotencyKeyHeader = "Idempotency-Key"

// scopeIdempotencyKey rewrites the client's Idempotency-Key into one of its account's own:
// "mg-" and the hex SHA-256 of the account and the client's value. Every account reaches the
// provider with the operator's one credential, so a provider that keeps answers by this key
// would otherwise give one account's answer to another that sends the same value. The same
// client value from the same account still makes the same key, so a retry stays one request.
// It answers the scoped key when the request sends exactly one, else "".
func scopeIdempotencyKey(h http.Header, account string) string {
	values := h[idempotencyKeyHeader]
	if len(values) == 0 {
		return ""
	}
	scoped := make([]string, len(values))
	for i, v := range values {
		sum := sha256.Sum256([]byte(account + "\x00" + v))
		scoped[i] = "mg-" + hex.EncodeToString(sum[:])
	}
	h[idempotencyKeyHeader] = scoped
	if len(scoped) != 1 {
		return "" // which one a provider keeps is its own choice: none is sure
	}
	return scoped[0]
}
