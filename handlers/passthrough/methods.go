package passthrough

import "slices"

// allowedMethods lists the methods of the forwarded endpoints whose path matches path, so that a
// known path called with another method is answered 405 with Allow rather than 404 (or a
// confusing complaint about the missing model of a GET).
func (rt *Router) allowedMethods(path string) []string {
	var allowed []string
	for _, list := range [][]Endpoint{Capabilities, rt.Extra} {
		for _, e := range list {
			if _, ok := e.match(e.Method, path); ok && !slices.Contains(allowed, e.Method) {
				allowed = append(allowed, e.Method)
			}
		}
	}
	return allowed
}
