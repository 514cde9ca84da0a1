package videotask

import (
	"strings"
	"testing"
)

// withoutRelayTokens finds a relay token after the relay path and on its own, and leaves every
// other text (task ids, words, a shorter or longer run) as it is.
func TestWithoutRelayTokens(t *testing.T) {
	h := &Handler{RelayBase: "https://gw.example.com"}
	token, url := h.relayToken()
	for _, tc := range []struct{ in, want string }{
		{"POST " + url + " failed: 403", "POST https://gw.example.com" + RelayPath + "[redacted] failed: 403"},
		{"hook token " + token + ".", "hook token [redacted]."},
		{"(" + token + ")" + token, "([redacted])[redacted]"},
		{"cgt-20250331175019-68d9t failed", "cgt-20250331175019-68d9t failed"},
		{strings.Repeat("a", relayTokenLen) + " " + strings.Repeat("Ab1", 15), strings.Repeat("a", relayTokenLen) + " " + strings.Repeat("Ab1", 15)},
		{"", ""},
	} {
		if got := withoutRelayTokens(tc.in); got != tc.want {
			t.Errorf("withoutRelayTokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
