#!/usr/bin/env bash
# Builds ./caddy with the mediagw modules, and optionally runs the example gateway.
#
#   ./xcaddy.sh          build ./caddy
#   ./xcaddy.sh run      build, then run Caddyfile.example (demo key: mg-demo-key)
#
# With xcaddy on PATH the build is `xcaddy build --with github.com/mediagw/mediagw=./` (the
# module root package imports every mediagw module; xcaddy replaces the module, not a package of
# it, with the local copy); without it, `go build ./cmd/caddy`, which links the same modules.
set -euo pipefail
cd "$(dirname "$0")"

build() {
	if command -v xcaddy >/dev/null 2>&1; then
		xcaddy build --output ./caddy --with github.com/mediagw/mediagw=./
	else
		go build -o ./caddy ./cmd/caddy
	fi
}

case "${1:-build}" in
build)
	build
	;;
run)
	build
	export MEDIAGW_DEMO_KEY="${MEDIAGW_DEMO_KEY:-mg-demo-key}"
	exec ./caddy run --config Caddyfile.example --adapter caddyfile
	;;
*)
	echo "usage: $0 [build|run]" >&2
	exit 2
	;;
esac
