// Package mediagw is the entry point for building Caddy with mediagw:
//
//	xcaddy build --with github.com/mediagw/mediagw
//
// Importing it registers every mediagw Caddy module (see ./caddymodule).
package mediagw

import (
	_ "github.com/mediagw/mediagw/caddymodule"
)
