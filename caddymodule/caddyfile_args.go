package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"
)

// parseBlock reads a directive's block, calling the parser of each subdirective. Unknown and
// repeated subdirectives are errors with file and line.
func parseBlock(d *caddyfile.Dispenser, subs map[string]func() error) error {
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		parse, ok := subs[name]
		if !ok {
			return d.Errf("unknown subdirective %q", name)
		}
		if seen[name] {
			return d.Errf("duplicate subdirective %q", name)
		}
		seen[name] = true
		if err := parse(); err != nil {
			return err
		}
	}
	return nil
}

// stringArg reads exactly one argument.
func stringArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.AllArgs(dst) {
		return d.ArgErr()
	}
	return nil
}

// durationArg reads one duration such as 1s, 15m or 7d.
func durationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur < 0 {
		return d.Errf("invalid duration %q", s)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// sizeArg reads one size such as 1MiB or 512KB.
func sizeArg(d *caddyfile.Dispenser, dst *int64) error {
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n == 0 || n > 1<<40 {
		return d.Errf("invalid size %q", s)
	}
	*dst = int64(n)
	return nil
}

// positiveIntArg reads one whole number of at least 1.
func positiveIntArg(d *caddyfile.Dispenser, dst *int) error {
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return d.Errf("expected a whole number of at least 1, got %q", s)
	}
	*dst = n
	return nil
}
