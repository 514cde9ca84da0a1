#!/usr/bin/env bash
# Task create: plain reverse_proxy to the simulator against two mediagw builds (OLD_CADDY, e.g.
# the commit before a change, and NEW_CADDY, default ./caddy), alternating in one run. Loopback only;
# every load run is bounded by DURATION.
#   OLD_CADDY=/tmp/caddy-old bench/create.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
SIM=19201 BASE=19202 OLD=19203 NEW=19204 KEY=mg-bench-key
cat >"$work/up.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$SIM {
	mediagw_simulator {
		queued_for 1h
	}
}
CFG
cat >"$work/base.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$BASE {
	reverse_proxy 127.0.0.1:$SIM
}
CFG
gw() { # port storedir
cat <<CFG
{
	admin off
	persist_config off
	mediagw {
		storage badger $2
		provider sim {
			base_url http://127.0.0.1:$SIM/api/v3
			api_key upstream-key
			models bench-video
		}
		key $KEY {
			account bench
		}
	}
}
http://127.0.0.1:$1 {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
	}
}
CFG
}
gw $OLD "$work/old" >"$work/old.caddy"
gw $NEW "$work/new" >"$work/new.caddy"
start() { taskset -c "$1" "$2" run --config "$3" --adapter caddyfile >"$3.log" 2>&1 & pids+=($!); }
start 1 ${NEW_CADDY:-./caddy} "$work/up.caddy"
start 0 ${NEW_CADDY:-./caddy} "$work/base.caddy"
start 0 ${OLD_CADDY:?build the earlier caddy and set OLD_CADDY} "$work/old.caddy"
start 0 ${NEW_CADDY:-./caddy} "$work/new.caddy"
for port in $SIM $BASE $OLD $NEW; do
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done
cat >"$work/create.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"model":"bench-video","content":[{"type":"text","text":"a lighthouse at dawn"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
load() {
	local out rps p50 p99
	out=$(taskset -c 1 wrk -t1 -c32 -d"$DURATION" --latency -s "$work/create.lua" "$2/api/v3/contents/generations/tasks")
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out"); p50=$(awk '$1=="50%" {print $2}' <<<"$out"); p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	printf '%-36s %10s req/s   p50 %9s   p99 %9s\n' "$1" "$rps" "$p50" "$p99"
}
for url in http://127.0.0.1:$BASE http://127.0.0.1:$OLD http://127.0.0.1:$NEW; do
	taskset -c 1 wrk -t1 -c32 -d3s -s "$work/create.lua" "$url/api/v3/contents/generations/tasks" >/dev/null
done
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2; do
	load "baseline reverse_proxy" http://127.0.0.1:$BASE
	load "mediagw OLD_CADDY" http://127.0.0.1:$OLD
	load "mediagw NEW_CADDY" http://127.0.0.1:$NEW
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
