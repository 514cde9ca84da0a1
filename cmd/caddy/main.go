// Command caddy is a custom Caddy build with the mediagw modules and the standard modules that a
// gateway uses (see internal/standardset for what is left out, and why). It is what ./xcaddy.sh
// builds when xcaddy is not installed. `xcaddy build --with github.com/mediagw/mediagw=./` gives
// the same mediagw with all of Caddy's standard modules.
//
// To link a standard module that is left out, import it here, for example
//
//	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/tracing"
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// Tracing, so that the `tracing` directive makes mediagw's upstream calls and store
	// operations spans of each request's trace (see docs/observability.md).
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/tracing"

	_ "github.com/mediagw/mediagw"
	_ "github.com/mediagw/mediagw/internal/standardset"
)

func main() {
	caddycmd.Main()
}
