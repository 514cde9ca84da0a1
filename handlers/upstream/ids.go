package upstream

import "strings"

// MaxIDBytes bounds the id of an object (a task) given by an upstream.
const MaxIDBytes = 256

// UsableID reports whether an id that an upstream gave for a new object can be handed to a client
// and used in a path: 1 to MaxIDBytes printable ASCII characters, none of them a space, a slash, a
// backslash, '?', '#' or '%', and not "." or "..". An answer with any other id is unrecognisable
// (ErrUnreadable): the id could not be stored, queried, or put in a path without reaching another
// resource of the upstream.
func UsableID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || strings.IndexByte(`/\?#%`, c) >= 0 {
			return false
		}
	}
	return true
}
