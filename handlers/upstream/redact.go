package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
)

// Redacted replaces what looks like a credential in an upstream's error message.
const Redacted = "[redacted]"

// secretPattern finds what looks like a credential in a message: keys with the usual prefixes
// (sk-, sk_, mg-, pk-, rk-, AIza…, AKIA…), a token after "Bearer", and any masked token (a word
// with three or more asterisks, as in "sk-proj-****abcd"), which providers print when they refuse
// a key.
var secretPattern = regexp.MustCompile(`(?i)\b(?:sk|mg|pk|rk)[-_][A-Za-z0-9*_\-]{4,}` +
	`|\bAIza[A-Za-z0-9*_\-]{8,}` +
	`|\bAKIA[A-Z0-9*]{12,}` +
	`|\bbearer\s+[A-Za-z0-9._~+/=*\-]{6,}` +
	`|[A-Za-z0-9_\-]*\*{3,}[A-Za-z0-9_\-*]*`)

// RedactSecrets returns s with every credential-like token replaced by Redacted, and every
// occurrence of one of secrets (the exact credentials the gateway sent, whatever they look like:
// an upstream may echo a key that has none of the usual prefixes), as written or spelled with
// percent escapes (a URL's ?key=%61bc…, which any URL decoder reads as the key).
func RedactSecrets(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
	}
	s = redactPercentEncoded(s, secrets)
	return secretPattern.ReplaceAllLiteralString(s, Redacted)
}

// RedactJSON returns a JSON document with credential-like tokens and secrets (see RedactSecrets)
// replaced in every string value and member name, decoded (so a secret spelled with JSON escapes
// is found too), and whether anything was replaced. A document with nothing to replace is
// returned as it is, byte for byte; one with something is decoded and encoded again (member
// order and spacing may change, numbers keep their text). Data that is not one JSON value is
// returned unchanged.
func RedactJSON(data []byte, secrets ...string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return data, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return data, false // more than one value
	}
	doc, changed := redactValue(doc, secrets)
	if !changed {
		return data, false
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(doc) != nil {
		return data, false
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), true
}

func redactValue(v any, secrets []string) (any, bool) {
	switch v := v.(type) {
	case string:
		r := RedactSecrets(v, secrets...)
		return r, r != v
	case []any:
		changed := false
		for i, e := range v {
			var c bool
			v[i], c = redactValue(e, secrets)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		changed := false
		for k, e := range v {
			var c bool
			e, c = redactValue(e, secrets)
			changed = changed || c
			if name := RedactSecrets(k, secrets...); name != k {
				// A member named with a secret: renamed (a second one so named is dropped).
				delete(v, k)
				k, changed = name, true
			}
			v[k] = e
		}
		return v, changed
	}
	return v, false
}
