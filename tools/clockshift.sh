#!/usr/bin/env bash
# clockshift.sh INSTANT PACKAGE [test binary flags...]
#
# Runs the tests of one package with the wall clock of every Go process moved so that the test
# binary starts at INSTANT (UTC, anything `date -d` reads: '2026-12-31 23:59:58.5'), to see what
# a test does across a midnight, a month's or a year's end, 29 February, or after the fixed dates
# in it have passed. The flags are the test binary's (-test.run, -test.v). For example:
#
#   tools/clockshift.sh '2026-11-30 23:59:59.9' ./integration/ -test.run '^TestDynamicKeyBudget$'
#
# How: a build overlay (go build -overlay) of the standard library's time package adds a fixed
# shift, read from MEDIAGW_CLOCK_SHIFT_MS, to what time.Now reads; the monotonic clock, and so
# every duration, timer and deadline, is left alone. The test binary is built first, then run in
# its package's directory with the shift measured just before it starts. The caddy binary the
# integration tests build is built through a `go` on PATH that adds the same overlay, and
# inherits the shift. Everything is built once per Go version (the overlay's text does not change
# with the instant).
#
# What is not Go keeps the real clock: redis-server, versitygw and chromium. A test that hands
# them a time fails for that reason alone (redis-server's TLS certificates are not yet valid, a
# presigned S3 URL is not yet or no longer valid, a record's absolute expiry is off by the shift),
# not for the date.
set -euo pipefail
if [ $# -lt 2 ]; then
	echo "usage: $0 INSTANT PACKAGE [test binary flags...]" >&2
	exit 2
fi
at=$(date -u -d "$1" +%s%3N)
pkg=$2
shift 2
goroot=$(go env GOROOT)
real_go=$(command -v go)
dir=${TMPDIR:-/tmp}/mediagw-clockshift-$(go env GOVERSION)
mkdir -p "$dir/bin"
# time.go with the shift added where Now reads the clock (the one `:= runtimeNow()` with mono).
awk '{ print } /^\tsec, nsec, mono := runtimeNow\(\)$/ { print "\tsec, nsec = clockShifted(sec, nsec)"; n++ }
	END { if (n != 1) exit 1 }' "$goroot/src/time/time.go" >"$dir/time.go" ||
	{ echo "$0: time.Now of $goroot is not as expected; cannot shift it" >&2; exit 1; }
cat >"$dir/zz_clockshift.go" <<'EOF'
package time

import "syscall"

// clockShift is the wall clock's shift in nanoseconds, from MEDIAGW_CLOCK_SHIFT_MS.
var clockShift = func() int64 {
	s, _ := syscall.Getenv("MEDIAGW_CLOCK_SHIFT_MS")
	var ms int64
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		ms = ms*10 + int64(c-'0')
	}
	if neg {
		ms = -ms
	}
	return ms * 1e6
}()

// clockShifted moves a wall clock reading by clockShift.
func clockShifted(sec int64, nsec int32) (int64, int32) {
	if clockShift == 0 {
		return sec, nsec
	}
	n := sec*1e9 + int64(nsec) + clockShift
	return n / 1e9, int32(n % 1e9)
}
EOF
cat >"$dir/overlay.json" <<EOF
{"Replace": {"$goroot/src/time/time.go": "$dir/time.go", "$goroot/src/time/zz_clockshift.go": "$dir/zz_clockshift.go"}}
EOF
cat >"$dir/bin/go" <<EOF
#!/bin/sh
# go, with the clock's overlay on every build (the integration tests build caddy with it).
if [ "\$1" = build ]; then shift; exec "$real_go" build -overlay "$dir/overlay.json" "\$@"; fi
exec "$real_go" "\$@"
EOF
chmod +x "$dir/bin/go"
"$real_go" test -overlay "$dir/overlay.json" -c -o "$dir/package.test" "$pkg"
cd "$pkg"
export PATH="$dir/bin:$PATH" MEDIAGW_CLOCK_SHIFT_MS=$((at - $(date -u +%s%3N)))
exec "$dir/package.test" -test.count=1 "$@"
