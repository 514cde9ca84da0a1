package apierror

import "github.com/mediagw/mediagw/internal/bounded"

// MaxEcho bounds, in bytes, a client's text that a message repeats (a model name the gateway
// does not serve): an error answer stays small whatever the client sent.
const MaxEcho = 256

// Echo is s as an error message may repeat it: at most MaxEcho bytes, cut on a character
// boundary and marked "…" when longer.
func Echo(s string) string { return bounded.Text(s, MaxEcho) }
