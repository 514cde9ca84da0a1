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
. "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10s}
workdir
SIM=19201 BASE=19202 OLD=19203 NEW=19204
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
$(provider sim "http://127.0.0.1:$SIM/api/v3" bench-video)
$(bench_key)
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
CADDY=$NEW_CADDY start 1 "$work/up.caddy"
CADDY=$NEW_CADDY start 0 "$work/base.caddy"
base_pid=${pids[1]}
CADDY=$NEW_CADDY start 0 "$work/new.caddy"
new_pid=${pids[2]}
ports="$SIM $BASE $NEW" targets="http://127.0.0.1:$BASE http://127.0.0.1:$NEW"
if [ -n "${OLD_CADDY:-}" ]; then
	CADDY=$OLD_CADDY start 0 "$work/old.caddy"
	old_pid=${pids[3]}
	ports="$ports $OLD" targets="$targets http://127.0.0.1:$OLD"
fi
# shellcheck disable=SC2086 # ports is a list of words
wait_ports $ports
write_lua
# load NAME URL PID [syncs]: one wrk run, printed as "NAME req/s p50 p99 cpu/req [syncs/req]".
load() {
	local out rps p50 p99 n before after perf="" syncs=""
	[ -z "${4:-}" ] || syncs_start "$3"
	before=$(cputicks "$3")
	out=$(taskset -c 1 wrk -t1 -c32 -d"$DURATION" --latency -s "$work/create.lua" "$2/api/v3/contents/generations/tasks")
	after=$(cputicks "$3")
	syncs_stop
	parse_wrk "$out"
	if grep -q Non-2xx <<<"$out"; then echo "$1: non-2xx answers: $(grep Non-2xx <<<"$out")" >&2; exit 1; fi
	printf '%-28s %10s req/s   p50 %9s   p99 %9s   cpu %6.1f us/req%s\n' "$1" "$rps" "$p50" "$p99" \
		"$(cpu_us "$before" "$after" "$n")" "$(syncs_per_req "$n")"
}
for url in $targets; do
	warm 1 32 "$work/create.lua" "$url/api/v3/contents/generations/tasks"
done
echo "machine: $(nproc) cores; load average $(loadavg)"
for _ in 1 2; do
	load "baseline reverse_proxy" http://127.0.0.1:$BASE "$base_pid"
	[ -z "${OLD_CADDY:-}" ] || load "mediagw OLD_CADDY" http://127.0.0.1:$OLD "$old_pid" syncs
	load "mediagw NEW_CADDY" http://127.0.0.1:$NEW "$new_pid" syncs
done
echo "load average after: $(loadavg)"
