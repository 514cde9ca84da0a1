// Package urlpath holds the path rule by which the gateway's own endpoint handlers tell their
// requests from the ones they pass on, without a path matcher in front of them.
package urlpath

import "strings"

// Under reports whether path is base or lies below it (base + "/" and anything after), compared
// byte for byte: no case folding, no cleaning, so /v1/videosX, /V1/VIDEOS and //v1/videos are
// not under /v1/videos. base must not end with a slash.
func Under(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || rest[0] == '/')
}
