// Package callbacks delivers task status changes to the clients' callback URLs: signed with the
// Standard Webhooks scheme, kept in a durable outbox until delivered, retried with backoff, and
// dialled only to public addresses.
package callbacks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every webhook secret: "whsec_" and the base64 of the key bytes.
const SecretPrefix = "whsec_"

// NewSecret returns a random webhook secret.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret returns the key bytes of a whsec_ secret.
func ParseSecret(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a webhook secret starts with %s", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("a webhook secret is %s followed by the base64 of at least 16 bytes", SecretPrefix)
	}
	return key, nil
}

// AccountSecret derives an account's own webhook secret from the gateway's, so each account can
// verify its callbacks without being able to forge another account's.
func AccountSecret(gatewayKey []byte, account string) string {
	mac := hmac.New(sha256.New, gatewayKey)
	mac.Write([]byte("mediagw webhook secret for account\x00" + account))
	return SecretPrefix + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the webhook-signature header value for a message: "v1," and the base64 of
// HMAC-SHA256(key, id + "." + timestamp + "." + body).
func Sign(key []byte, id string, timestamp time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a delivery as a receiver would: the signature (one of the space-separated
// values) must match and the timestamp must be within tolerance of now.
func Verify(secret, id, timestamp, signatures string, body []byte, tolerance time.Duration) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("bad webhook-timestamp %q", timestamp)
	}
	at := time.Unix(ts, 0)
	if d := time.Since(at); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook-timestamp is %v away from now", d)
	}
	want := Sign(key, id, at, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("no webhook-signature matches")
}
