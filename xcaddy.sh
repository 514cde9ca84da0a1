#!/usr/bin/env bash
# Builds ./caddy with the mediagw modules, and optionally runs the example gateway.
#
#   ./xcaddy.sh          build ./caddy
#   ./xcaddy.sh run      build, then run Caddyfile.example (demo key: mg-demo-key)
#
# With xcaddy on PATH the build is `xcaddy build --with github.com/mediagw/mediagw=./` (the
# module root package imports every mediagw module; xcaddy replaces the module, not a package of
# it, with the local copy); without it, `go build ./cmd/caddy`, which links the mediagw modules
# and the standard modules a gateway uses (internal/standardset).
#
# It says what it is doing: fetching modules (first build only), compiling (with a package
# count), and how long the build took. A first build with empty Go caches downloads and compiles
# a lot; see "First build and first test run" in bench/README.md for measured times and sizes.
set -euo pipefail
cd "$(dirname "$0")"

# progress shows a progress line on stderr when it is a terminal, each update over the last;
# say prints a line that stays.
if [ -t 2 ]; then
	progress() { printf '\r\033[K%s' "$*" >&2; }
	endline() { printf '\n' >&2; }
else
	progress() { :; }
	endline() { :; }
fi
say() { printf '%s\n' "$*" >&2; }

# fetch downloads the modules ./cmd/caddy needs, counting them.
fetch() {
	say "xcaddy.sh: fetching Go modules (only the first build downloads anything; about 1 GB of module cache)..."
	local n=0 line
	while IFS= read -r line; do
		case "$line" in
		"go: downloading "*)
			n=$((n + 1))
			progress "  downloaded $n modules: ${line#go: downloading }"
			;;
		*) say "$line" ;;
		esac
	done < <(go list -deps ./cmd/caddy 2>&1 >/dev/null; echo $? >"$status_file")
	endline
	if [ "$(cat "$status_file")" != 0 ]; then
		rm -f "$status_file"
		say "xcaddy.sh: fetching modules failed (see the messages above; is the Go module proxy reachable?)"
		exit 1
	fi
	say "xcaddy.sh: modules ready ($n downloaded)"
}

# compile builds ./caddy, counting the packages that are compiled (cached ones are skipped).
compile() {
	local total
	total=$(go list -deps ./cmd/caddy | wc -l | tr -d ' ')
	say "xcaddy.sh: compiling ./caddy ($total packages; cached packages are not compiled again; a first build takes minutes)..."
	local n=0 line
	while IFS= read -r line; do
		case "$line" in
		*" "* | *":"*) endline; say "$line" ;; # a compiler message, not a package name
		*)
			n=$((n + 1))
			progress "  compiled $n packages: $line"
			if [ ! -t 2 ] && [ $((n % 100)) -eq 0 ]; then say "  compiled $n packages"; fi
			;;
		esac
	done < <(go build -v -o ./caddy ./cmd/caddy 2>&1; echo $? >"$status_file")
	endline
	if [ "$(cat "$status_file")" != 0 ]; then
		rm -f "$status_file"
		say "xcaddy.sh: the build failed (see the messages above)"
		exit 1
	fi
}

build() {
	local start=$SECONDS
	if command -v xcaddy >/dev/null 2>&1; then
		say "xcaddy.sh: building with xcaddy (all standard modules plus mediagw)..."
		xcaddy build --output ./caddy --with github.com/mediagw/mediagw=./
	else
		status_file=$(mktemp)
		fetch
		compile
		rm -f "$status_file"
	fi
	say "xcaddy.sh: built ./caddy in $((SECONDS - start)) s"
}

case "${1:-build}" in
build)
	build
	;;
run)
	build
	say "xcaddy.sh: running Caddyfile.example: gateway on http://127.0.0.1:8080, demo key mg-demo-key"
	exec ./caddy run --config Caddyfile.example --adapter caddyfile
	;;
*)
	echo "usage: $0 [build|run]" >&2
	exit 2
	;;
esac
