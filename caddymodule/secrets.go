package caddymodule

import (
	"fmt"
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

// envPlaceholder is {env.NAME} without a default; filePlaceholder is {file./path}.
var (
	envPlaceholder  = regexp.MustCompile(`\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`)
	filePlaceholder = regexp.MustCompile(`\{file\.([^{}]+)\}`)
)

// expandRequired expands a configured value as expandSecret does and refuses a value that comes
// out empty because of a placeholder without a default: an environment variable that is not set
// where caddy runs, or a file that is missing or empty. Such a value would otherwise start a
// gateway with no credential (or a generated one) in place of the configured one. option names
// the setting in the error, which shows the placeholders, never a value (a value that comes out
// empty consists of placeholders and white space only). A value left empty on purpose
// ({env.NAME:}) is returned empty.
func expandRequired(repl *caddy.Replacer, option, raw string) (string, error) {
	v := strings.TrimSpace(expandSecret(repl, raw))
	if v != "" {
		return v, nil
	}
	var why []string
	for _, m := range envPlaceholder.FindAllStringSubmatch(raw, -1) {
		if v, set := os.LookupEnv(m[1]); strings.TrimSpace(v) == "" {
			state := "is not set"
			if set {
				state = "is empty"
			}
			why = append(why, fmt.Sprintf("the environment variable %s %s where caddy runs: set it (export %s=…) before starting caddy, or write {env.%s:<default>}", m[1], state, m[1], m[1]))
		}
	}
	for _, m := range filePlaceholder.FindAllStringSubmatch(raw, -1) {
		if b, err := os.ReadFile(m[1]); err != nil {
			why = append(why, fmt.Sprintf("the file cannot be read: %v", err))
		} else if strings.TrimSpace(string(b)) == "" {
			why = append(why, fmt.Sprintf("the file %s is empty", m[1]))
		}
	}
	if len(why) == 0 {
		return "", nil
	}
	return "", fmt.Errorf("%s is empty: %s: %s", option, strings.TrimSpace(raw), strings.Join(why, "; "))
}
