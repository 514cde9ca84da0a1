#!/usr/bin/env bash
# Task create: plain reverse_proxy to the simulator against one or two mediagw builds (NEW_CADDY,
# default ./caddy, and optionally OLD_CADDY, e.g. the commit before a change), alternating in one
# run. Beside throughput it prints each proxy's CPU time per request and, for the gateways, the
# disk syncs (fdatasync + msync + fsync system calls, counted by perf if it is installed) per
# create: figures that other load on a shared machine disturbs far less than throughput.
# Loopback only; every load run is bounded by DURATION.
#   bench/create.sh
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
NEW_CADDY=${NEW_CADDY:-./caddy}
[ "$NEW_CADDY" != ./caddy ] || ./xcaddy.sh
gw $OLD "$work/old" >"$work/old.caddy"
gw $NEW "$work/new" >"$work/new.caddy"
start() { taskset -c "$1" "$2" run --config "$3" --adapter caddyfile >"$3.log" 2>&1 & pids+=($!); }
start 1 "$NEW_CADDY" "$work/up.caddy"
start 0 "$NEW_CADDY" "$work/base.caddy"
base_pid=${pids[1]}
start 0 "$NEW_CADDY" "$work/new.caddy"
new_pid=${pids[2]}
ports="$SIM $BASE $NEW" targets="http://127.0.0.1:$BASE http://127.0.0.1:$NEW"
if [ -n "${OLD_CADDY:-}" ]; then
	start 0 "$OLD_CADDY" "$work/old.caddy"
	old_pid=${pids[3]}
	ports="$ports $OLD" targets="$targets http://127.0.0.1:$OLD"
fi
for port in $ports; do
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done
cat >"$work/create.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"model":"bench-video","content":[{"type":"text","text":"a lighthouse at dawn"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# load NAME URL PID [syncs]: one wrk run, printed as "NAME req/s p50 p99 cpu/req [syncs/req]".
load() {
	local out rps p50 p99 n before after perf="" syncs=""
	if [ -n "${4:-}" ] && command -v perf >/dev/null 2>&1; then
		perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_msync,syscalls:sys_enter_fsync \
			-p "$3" -o "$work/perf" 2>/dev/null &
		perf=$!
	fi
	before=$(cputicks "$3")
	out=$(taskset -c 1 wrk -t1 -c32 -d"$DURATION" --latency -s "$work/create.lua" "$2/api/v3/contents/generations/tasks")
	after=$(cputicks "$3")
	if [ -n "$perf" ]; then
		kill -INT "$perf" && wait "$perf" || true
		syncs=$(awk -F, '/syscalls/ {s += $1} END {print s + 0}' "$work/perf" 2>/dev/null || echo 0)
	fi
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out"); p50=$(awk '$1=="50%" {print $2}' <<<"$out"); p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	n=$(awk '/requests in/ {print $1}' <<<"$out")
	if grep -q Non-2xx <<<"$out"; then echo "$1: non-2xx answers: $(grep Non-2xx <<<"$out")" >&2; exit 1; fi
	printf '%-28s %10s req/s   p50 %9s   p99 %9s   cpu %6.1f us/req%s\n' "$1" "$rps" "$p50" "$p99" \
		"$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {print t / hz / n * 1e6}')" \
		"${syncs:+$(awk -v s="$syncs" -v n="$n" 'BEGIN {printf "   disk syncs %.3f/req", s / n}')}"
}
for url in $targets; do
	taskset -c 1 wrk -t1 -c32 -d3s -s "$work/create.lua" "$url/api/v3/contents/generations/tasks" >/dev/null
done
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2; do
	load "baseline reverse_proxy" http://127.0.0.1:$BASE "$base_pid"
	[ -z "${OLD_CADDY:-}" ] || load "mediagw OLD_CADDY" http://127.0.0.1:$OLD "$old_pid" syncs
	load "mediagw NEW_CADDY" http://127.0.0.1:$NEW "$new_pid" syncs
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
