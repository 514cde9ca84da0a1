package bounded

import "unicode/utf8"

// Text is s when it has at most limit bytes, else its longest prefix of whole UTF-8 characters
// that leaves room for "…", and "…": at most limit bytes, valid UTF-8 if s was. It keeps a text
// the gateway did not write (a provider's message, a client's model name echoed in an error)
// within what an answer or a record may carry.
func Text(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	end := limit - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end-- // s[end] continues the character before it: cut before that character
	}
	return s[:end] + ellipsis
}
