package videotask

import (
	"strings"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// relayTokenLen is the length of a relay token as relayToken makes it: 32 random bytes,
// unpadded base64url.
const relayTokenLen = 43

// withoutRelayTokens is s with every callback relay token it quotes replaced by
// upstream.Redacted. The gateway keeps only a token's hash, so a token is found by where and how
// it is written: the base64url characters (or their percent escapes) that follow the relay
// path (RelayPath), and any word of exactly relayTokenLen base64url characters that mixes upper case,
// lower case and digits, as a random token does (a provider's echo of the token alone). The
// token is a secret between the gateway and the upstream: whoever holds it can post hints
// about the task to the relay. A token written on its own but run together with other base64url
// characters (tok_<token>) is not found: no word tells where it starts.
func withoutRelayTokens(s string) string {
	if !strings.Contains(s, RelayPath) && len(s) < relayTokenLen {
		return s
	}
	var b strings.Builder
	for rest := s; ; {
		i := strings.Index(rest, RelayPath)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i+len(RelayPath)])
		rest = rest[i+len(RelayPath):]
		end := 0
		for end < len(rest) && (isBase64URL(rest[end]) || rest[end] == '%') {
			end++ // a token's characters, or percent escapes of them
		}
		if end > 0 {
			b.WriteString(upstream.Redacted)
		}
		rest = rest[end:]
	}
	return withoutTokenWords(b.String())
}

// withoutTokenWords replaces each word of s (a run of base64url characters) that looks like a
// relay token (see withoutRelayTokens) by upstream.Redacted.
func withoutTokenWords(s string) string {
	var b strings.Builder
	start, changed := 0, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isBase64URL(s[i]) {
			continue
		}
		if i-start == relayTokenLen && mixedWord(s[start:i]) {
			if !changed {
				b.WriteString(s[:start])
				changed = true
			}
			b.WriteString(upstream.Redacted)
		} else if changed {
			b.WriteString(s[start:i])
		}
		if changed && i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	if !changed {
		return s
	}
	return b.String()
}

func isBase64URL(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// mixedWord reports whether w has an upper-case letter, a lower-case letter and a digit.
func mixedWord(w string) bool {
	var upper, lower, digit bool
	for i := range len(w) {
		c := w[i]
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return upper && lower && digit
}
