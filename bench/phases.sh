#!/usr/bin/env bash
# Task create after pass-through traffic: one gateway (the bench/run.sh configuration: metrics,
# usage records through mediagw_buffered), loaded in phases, each bounded by its duration:
# pass-through chat (PASS), then task create (CREATE), then task query (QUERY); a phase of 0 is
# skipped. For each phase it prints the gateway's CPU time per request (user + system from
# /proc/PID/stat), its heap allocations per request (memstats.Mallocs from the admin endpoint)
# and, with perf installed, its disk syncs per request (fdatasync + msync + fsync system calls):
# figures that other load on a shared machine disturbs far less than throughput. After each phase
# it prints the gateway's resident memory (ps -o rss) and the size of its Badger directory.
# Compare a create phase after PASS=30s with one after PASS=0 to see whether earlier
# pass-through traffic slows creates. With PROF=FILE, a CPU profile of 8 s of the create phase is
# written to FILE (go tool pprof ./caddy FILE), and the allocations of the whole create phase to
# FILE.allocs (go tool pprof -sample_index=alloc_objects -diff_base FILE.allocs0 ./caddy
# FILE.allocs).
#
#   bench/phases.sh                          # PASS=0 CREATE=10s QUERY=0
#   PASS=30s CREATE=10s QUERY=10s bench/phases.sh
#   CADDY=/tmp/caddy-old PASS=30s bench/phases.sh
#   GW_OPTIONS=$'\t\twatcher {\n\t\t\tinterval 1h\n\t\t}' bench/phases.sh   # lines added to the
#                                            # gateway's mediagw options block
#
# Loopback only. The gateway is pinned to CPU 0, wrk and the upstreams to CPU 1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PASS=${PASS:-0} CREATE=${CREATE:-10s} QUERY=${QUERY:-0}
CADDY=${CADDY:-./caddy}
[ "$CADDY" != ./caddy ] || ./xcaddy.sh
need wrk jq
workdir
UP=19400 SIM=19401 GW=19404 ADMIN=19405
cat >"$work/up.caddy" <<CFG
{
	admin off
	persist_config off
}
$(upstream_sites $UP $SIM)
CFG
cat >"$work/gw.caddy" <<CFG
{
	admin 127.0.0.1:$ADMIN
	persist_config off
$(usage_log "$work")
	mediagw {
		storage badger $work/store
$(provider chat "http://127.0.0.1:$UP/v1" bench-chat)
$(provider sim "http://127.0.0.1:$SIM/api/v3" bench-video)
$(bench_key)
${GW_OPTIONS:-}
	}
}
http://127.0.0.1:$GW {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		mediagw_route
		@chat vars {mediagw.provider} chat
		reverse_proxy @chat 127.0.0.1:$UP
		reverse_proxy 127.0.0.1:$SIM
	}
}
CFG
start 1 "$work/up.caddy"
start 0 "$work/gw.caddy"
gw=${pids[1]}
wait_ports $UP $SIM $GW
write_lua
# phase NAME URL SCRIPT DURATION
phase() {
	# shellcheck disable=SC2034 # parse_wrk sets p99 too
	local out before after m0 m1 rps p50 p99 n perf="" syncs=""
	syncs_start "$gw"
	before=$(cputicks "$gw") m0=$(mallocs $ADMIN)
	out=$(taskset -c 1 wrk -t1 -c32 -d"$4" --latency -s "$3" "$2")
	after=$(cputicks "$gw") m1=$(mallocs $ADMIN)
	syncs_stop
	if grep -q Non-2xx <<<"$out"; then echo "$1: $(grep Non-2xx <<<"$out")" >&2; exit 1; fi
	parse_wrk "$out"
	printf '%-8s %8s requests %10s req/s   p50 %9s   cpu %7.1f us/req   allocs %5.0f/req%s   rss %s MiB   store %s MiB\n' "$1" "$n" "$rps" \
		"$p50" "$(cpu_us "$before" "$after" "$n")" "$(awk -v a="$m0" -v b="$m1" -v n="$n" 'BEGIN {print (b - a) / n}')" \
		"$(syncs_per_req "$n")" "$(ps -o rss= -p "$gw" | awk '{printf "%.0f", $1 / 1024}')" \
		"$(du -sk "$work/store" | awk '{printf "%.1f", $1 / 1024}')"
}
echo "machine: $(nproc) cores; load average $(loadavg); PASS=$PASS CREATE=$CREATE QUERY=$QUERY"
tasks=http://127.0.0.1:$GW/api/v3/contents/generations/tasks
[ "$PASS" = 0 ] || phase pass "http://127.0.0.1:$GW/v1/chat/completions" "$work/chat.lua" "$PASS"
if [ "$CREATE" != 0 ]; then
	prof=""
	if [ -n "${PROF:-}" ]; then
		curl -s -o "$PROF.allocs0" "http://127.0.0.1:$ADMIN/debug/pprof/allocs"
		(sleep 1; curl -s -o "$PROF" "http://127.0.0.1:$ADMIN/debug/pprof/profile?seconds=8") &
		prof=$!
	fi
	phase create "$tasks" "$work/create.lua" "$CREATE"
	if [ -n "$prof" ]; then
		wait "$prof"
		curl -s -o "$PROF.allocs" "http://127.0.0.1:$ADMIN/debug/pprof/allocs"
	fi
fi
if [ "$QUERY" != 0 ]; then
	id=$(newtask "$tasks")
	phase query "$tasks/$id" "$work/get.lua" "$QUERY"
fi
echo "load average after: $(loadavg)"
