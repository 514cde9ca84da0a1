package caddymodule

import (
	"os"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// envWithDefault is {env.NAME:default}, an environment placeholder with a fallback value.
var envWithDefault = regexp.MustCompile(`\{env\.([A-Za-z_][A-Za-z0-9_]*):([^{}]*)\}`)

// expandSecret expands the placeholders of a configured secret or address when the config
// loads. Besides Caddy's {env.NAME} and {file./path} it accepts {env.NAME:default}: the default
// is used when NAME is unset or empty. (Caddy's runtime placeholders have no defaults, and the
// Caddyfile's {$NAME:default} would be expanded into the JSON config, where secrets must not be.)
func expandSecret(repl *caddy.Replacer, s string) string {
	var sb strings.Builder
	last := 0
	for _, m := range envWithDefault.FindAllStringSubmatchIndex(s, -1) {
		// Values are not expanded again: a value that contains braces is taken as it is.
		sb.WriteString(repl.ReplaceKnown(s[last:m[0]], ""))
		if v := os.Getenv(s[m[2]:m[3]]); v != "" {
			sb.WriteString(v)
		} else {
			sb.WriteString(s[m[4]:m[5]])
		}
		last = m[1]
	}
	sb.WriteString(repl.ReplaceKnown(s[last:], ""))
	return sb.String()
}
