package upstream

import (
	"strings"

	"github.com/mediagw/mediagw/internal/percent"
)

// redactPercentEncoded is s with every occurrence of one of secrets that s spells with percent
// escapes (%XX, either case, any of the secret's bytes escaped and the others not) replaced by
// Redacted, escapes and all; s as it is when it has no escape or no such occurrence.
func redactPercentEncoded(s string, secrets []string) string {
	if !strings.Contains(s, "%") || secretAt(percent.Decode(s), secrets, strings.Contains) == 0 {
		return s
	}
	plain, at := percent.Spelled(s)
	var b strings.Builder
	for i := 0; i < len(plain); {
		if n := secretAt(plain[i:], secrets, strings.HasPrefix); n > 0 {
			b.WriteString(Redacted)
			i += n
			continue
		}
		b.WriteString(s[at[i]:at[i+1]])
		i++
	}
	return b.String()
}

// secretAt is the length of the first of secrets for which has(s, secret) holds (s contains it,
// or begins with it), or 0.
func secretAt(s string, secrets []string, has func(s, secret string) bool) int {
	for _, secret := range secrets {
		if secret != "" && has(s, secret) {
			return len(secret)
		}
	}
	return 0
}
