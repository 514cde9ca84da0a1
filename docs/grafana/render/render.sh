#!/usr/bin/env bash
# Renders the Grafana dashboard docs/grafana/mediagw.json into docs/grafana/mediagw.png: a real
# gateway and a real Prometheus on loopback, a bounded workload of a few minutes, each panel's
# queries run through Prometheus's HTTP API and drawn with uPlot, a screenshot with chromium. It
# is a rendering of the dashboard's queries, not Grafana itself. See render.mjs.
#
#   docs/grafana/render/render.sh                       # 3 minutes of workload
#   RENDER_DURATION=60 RENDER_HTML=/tmp/dash.html docs/grafana/render/render.sh
#
# Needs Go, Node 20 or later with npm, and Debian's prometheus and chromium packages (installed
# with apt-get when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

missing=()
command -v "${PROMETHEUS:-prometheus}" >/dev/null 2>&1 || missing+=(prometheus)
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
if ((${#missing[@]})); then
	echo "render.sh: installing ${missing[*]} with apt-get"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
(cd "$repo" && ./xcaddy.sh)
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
cd "$here"
exec node render.mjs
