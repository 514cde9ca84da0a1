package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
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

// RedactSecrets returns s with every credential-like token replaced by Redacted.
func RedactSecrets(s string) string {
	return secretPattern.ReplaceAllLiteralString(s, Redacted)
}

// RedactJSON returns a JSON document with credential-like tokens replaced in every string value,
// and whether anything was replaced. A document with nothing to replace is returned as it is,
// byte for byte; one with something is decoded and encoded again (member order and spacing may
// change, numbers keep their text). Data that is not one JSON value is returned unchanged.
func RedactJSON(data []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return data, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return data, false // more than one value
	}
	doc, changed := redactValue(doc)
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

func redactValue(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		r := RedactSecrets(v)
		return r, r != v
	case []any:
		changed := false
		for i, e := range v {
			var c bool
			v[i], c = redactValue(e)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		changed := false
		for k, e := range v {
			var c bool
			v[k], c = redactValue(e)
			changed = changed || c
		}
		return v, changed
	}
	return v, false
}
