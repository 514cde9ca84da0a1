package providers

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/percent"
)

// Credentials are the secrets u sends to its upstream, as it sends them: its API key, or its
// Kling secret key and the tokens made of it (the current one, and the one that it replaced,
// which a call made just before the renewal carried). A provider may quote one of them in an
// answer (an error message that echoes the request's header, a debug member), and no such
// answer may reach a client as it is: see Echoes.
func (u *Upstream) Credentials() []string {
	var buf [4]string
	return slices.Clone(u.CredentialsInto(&buf))
}

// CredentialsInto is Credentials without a copy of its own, for a caller on every proxied answer
// (where Credentials would allocate), which must only read it: written into buf (which the caller
// keeps on its stack) for an upstream whose tokens change (AuthKlingJWT), or the upstream's own,
// found once, for any other.
func (u *Upstream) CredentialsInto(buf *[4]string) []string {
	if u.jwt == nil && u.secrets != nil {
		return u.secrets[:len(u.secrets):len(u.secrets)]
	}
	return u.credentialsInto(buf)
}

// credentialsInto is CredentialsInto found anew, written into buf.
func (u *Upstream) credentialsInto(buf *[4]string) []string {
	secrets := buf[:0]
	for _, s := range u.credentials() {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	return secrets
}

// Echoes reports whether a JSON answer (body) holds one of u's Credentials in one of its
// strings, as decoded: byte for byte, or spelled with JSON escapes (\u0061 for a, an escape in
// the middle of the key), which any client's decoder reads as the key, or with percent escapes
// (%61 for a), which a URL's decoder reads as the key. It is meant for every answer the gateway
// relays from u, before the answer is decoded. An answer without a backslash or a % (every
// usual one) is only searched, which allocates nothing for a credential of up to 32 bytes; one
// with an escape is searched once more with its JSON escapes decoded, and once more with its
// percent escapes decoded too (a copy of it each).
// A false report costs only a redaction pass that changes nothing (upstream.RedactJSON).
func (u *Upstream) Echoes(body []byte) bool {
	secrets := u.credentials()
	for _, s := range secrets {
		if s != "" && bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	hasEscape, hasPercent := bytes.IndexByte(body, '\\') >= 0, bytes.IndexByte(body, '%') >= 0
	if !hasEscape && !hasPercent {
		return false // no escape: every decoded string is a part of body, searched above
	}
	decoded := body
	if hasEscape {
		decoded = unescaped(body)
		if containsAny(decoded, secrets[:]) {
			return true
		}
	}
	// A string's percent escapes too (a \u0025 decoded above is one): a URL's decoder reads
	// ?key=%61bc… as the key.
	return bytes.IndexByte(decoded, '%') >= 0 && containsAny([]byte(percent.Decode(string(decoded))), secrets[:])
}

// containsAny reports whether b contains one of secrets (the empty ones aside).
func containsAny(b []byte, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// unescaped is a JSON text with its string escapes decoded in place (\" is ", \u0061 is a, a
// surrogate pair its character); a backslash that begins no escape is kept as it is.
func unescaped(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			out = append(out, c)
			continue
		}
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			out, i = append(out, e), i+1
		case 'b', 'f', 'n', 'r', 't':
			out, i = append(out, "\b\f\n\r\t"[strings.IndexByte("bfnrt", e)]), i+1
		case 'u':
			r, n := unicodeEscape(body[i:])
			if n == 0 {
				out = append(out, c)
				continue
			}
			out, i = utf8.AppendRune(out, r), i+n-1
		default:
			out = append(out, c)
		}
	}
	return out
}

// unicodeEscape reads the \uXXXX escape that b begins with (and the low surrogate's after a
// high one): its character and how many bytes it took; 0 when b begins with none.
func unicodeEscape(b []byte) (rune, int) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if low, ok := hex4(b[6:]); ok {
			if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
				return pair, 12
			}
		}
	}
	return r, 6
}

// hex4 reads the \uXXXX at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 32)
	return rune(n), err == nil
}

// credentials are u's secrets, some of them empty.
func (u *Upstream) credentials() [4]string {
	c := [4]string{u.APIKey, u.SecretKey}
	if u.jwt != nil {
		c[2], c[3] = u.jwt.tokens()
	}
	return c
}
