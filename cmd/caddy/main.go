// Command caddy is a custom Caddy build with the standard modules and the mediagw modules. It is
// what ./xcaddy.sh builds when xcaddy is not installed; the result is the same as
//
//	xcaddy build --with github.com/mediagw/mediagw=./
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mediagw/mediagw"
)

func main() {
	caddycmd.Main()
}
