package caddymodule

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"github.com/mediagw/mediagw/handlers/billing"
)

// budgetArgs reads `budget <amount> [day|month]` into amount and period; where names the
// directive in errors (key, member_keys).
func budgetArgs(d *caddyfile.Dispenser, where string, amount *billing.EnteredMoney, period *string) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 || len(args) == 2 && args[1] != "day" && args[1] != "month" {
		return d.Errf("%s: usage: budget <amount> [day|month], e.g. budget 50 month", where)
	}
	m, err := billing.ParseEntered(args[0]) // an amount as typed: no '+'
	if err != nil || m <= 0 {
		return d.Errf("%s: budget: want an amount above 0 with at most 6 decimals and no sign, got %q", where, args[0])
	}
	*amount, *period = billing.EnteredMoney(m), ""
	if len(args) == 2 {
		*period = args[1]
	}
	return nil
}

// parseBlock reads a directive's block, calling the parser of each subdirective. Unknown
// subdirectives, and repeated ones other than those named repeatable, are errors with file and
// line.
func parseBlock(d *caddyfile.Dispenser, subs map[string]func() error, repeatable ...string) error {
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		parse, ok := subs[name]
		if !ok {
			return unknownSubdirective(d, "", slices.Sorted(maps.Keys(subs)))
		}
		if seen[name] && !slices.Contains(repeatable, name) {
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

// unknownSubdirective is the error for the subdirective at d that the block does not take:
// where (such as `provider "openai": `) starts it, and it suggests the known name the token is
// most likely a misspelling of, or else lists the known names.
func unknownSubdirective(d *caddyfile.Dispenser, where string, known []string) error {
	name := d.Val()
	best, bestDist := "", 3 // suggest only names at most two edits away
	for _, k := range known {
		if dist := editDistance(strings.ToLower(name), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return d.Errf("%sunknown subdirective %q; did you mean %q?", where, name, best)
	}
	return d.Errf("%sunknown subdirective %q; the block takes %s", where, name, strings.Join(quoteAll(known), ", "))
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// rateArg reads one rate in requests per second, more than 0, such as 20 or 0.5.
func rateArg(d *caddyfile.Dispenser, dst *float64) error {
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || !(n > 0) || math.IsInf(n, 0) {
		return d.Errf("expected a number of requests per second above 0, got %q", s)
	}
	*dst = n
	return nil
}
