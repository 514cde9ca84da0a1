package videotask

import "unicode/utf8"

// MaxFailureMessage bounds a failed task's error.message, in bytes, as it is stored and
// answered (the query, the list's failure_reason, callbacks, the /v1/videos front): a longer
// message of the provider's is cut on a UTF-8 character boundary and ends with "…". A provider
// may write megabytes there; the task record keeps only this much.
const MaxFailureMessage = 4096

// MaxFailureCode bounds a failed task's error.code the same way.
const MaxFailureCode = 256

// cutText is s when it has at most limit bytes, else its longest prefix of whole UTF-8
// characters that leaves room for "…", and "…": at most limit bytes, valid UTF-8 if s was.
func cutText(s string, limit int) string {
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
