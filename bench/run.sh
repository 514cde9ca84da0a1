#!/usr/bin/env bash
# mediagw benchmarks, each beside a baseline measured in the same run: plain Caddy reverse_proxy
# to the same upstream. See bench/README.md for what is measured and the last results.
#
#   bench/run.sh                 # 10 s per load run
#   DURATION=30s bench/run.sh
#   ONLY=passthrough bench/run.sh            # only the pass-through pairs (32 and 1 connections)
#   PROFILE=/tmp/prof bench/run.sh           # also write the gateway's CPU and allocation profiles
#                                            # of one 32-connection mediagw run into that directory
#
# Everything runs on loopback. The gateway (or the baseline Caddy) is pinned to CPU 0; wrk and the
# upstreams to CPU 1, so the two proxies get the same CPU budget. Every load run is bounded by
# DURATION; the upload run by its size.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
ONLY=${ONLY:-}
PROFILE=${PROFILE:-}
need wrk jq
./xcaddy.sh
go build -o bench/rss/rss ./bench/rss

workdir

UP=19100 SIM=19101 BASE=19102 BASE_SIM=19103 GW=19104 SSE=19105 BASE_ADMIN=19106 GW_ADMIN=19107

cat >"$work/upstream.caddy" <<CFG
{
	admin off
	persist_config off
}
$(upstream_sites $UP $SIM)
CFG

# Both proxies keep their admin endpoint on loopback: /debug/vars gives the allocations per
# request, /debug/pprof the profiles. It costs nothing per proxied request.
cat >"$work/baseline.caddy" <<CFG
{
	admin 127.0.0.1:$BASE_ADMIN
	persist_config off
}
http://127.0.0.1:$BASE {
	reverse_proxy 127.0.0.1:$UP
}
http://127.0.0.1:$BASE_SIM {
	reverse_proxy 127.0.0.1:$SIM
}
CFG

# The gateway runs with every observability feature on: metrics (always counted), and usage
# records routed to their own file by Caddy's log configuration, through mediagw_buffered.
cat >"$work/gateway.caddy" <<CFG
{
	admin 127.0.0.1:$GW_ADMIN
	persist_config off
$(usage_log "$work")
	mediagw {
		storage badger $work/store
$(provider chat "http://127.0.0.1:$UP/v1" bench-chat)
$(provider sim "http://127.0.0.1:$SIM/api/v3" bench-video)
$(provider sim-openai "http://127.0.0.1:$SIM/v1" bench-whisper)
$(provider sse "http://127.0.0.1:$SSE/v1" bench-sse)
$(bench_key)
	}
}
http://127.0.0.1:$GW {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		mediagw_route
		@chat vars {mediagw.provider} chat
		reverse_proxy @chat 127.0.0.1:$UP
		@sse vars {mediagw.provider} sse
		reverse_proxy @sse 127.0.0.1:$SSE
		reverse_proxy 127.0.0.1:$SIM
	}
}
CFG

start 1 "$work/upstream.caddy"
start 0 "$work/baseline.caddy"
start 0 "$work/gateway.caddy"
base_pid=${pids[1]} gw_pid=${pids[2]}
wait_ports $UP $SIM $BASE $BASE_SIM $GW

write_lua

# load NAME URL SCRIPT CONNS [PID ADMIN]: one wrk run, printed as "NAME req/s p50 p99"; with PID
# and ADMIN (the proxy's admin port), also the proxy's CPU time and heap allocations per request,
# which other load on a shared machine disturbs far less than throughput does. With PROFILE and
# PROF=1 in the environment, the run is profiled (CPU, and allocations over the run).
load() {
	local out before=0 after=0 m0=0 m1=0 prof=""
	if [ -n "${5:-}" ]; then
		before=$(cputicks "$5") m0=$(mallocs "$6")
	fi
	if [ -n "$PROFILE" ] && [ "${PROF:-}" = 1 ]; then
		mkdir -p "$PROFILE"
		curl -sf -o "$PROFILE/allocs-before.pb.gz" "http://127.0.0.1:$6/debug/pprof/allocs"
		curl -sf -o "$PROFILE/cpu.pb.gz" "http://127.0.0.1:$6/debug/pprof/profile?seconds=${DURATION%s}" &
		prof=$!
	fi
	out=$(taskset -c 1 wrk -t1 -c"$4" -d"$DURATION" --latency -s "$3" "$2")
	if [ -n "${5:-}" ]; then
		after=$(cputicks "$5") m1=$(mallocs "$6")
	fi
	if [ -n "$prof" ]; then
		wait "$prof"
		curl -sf -o "$PROFILE/allocs-after.pb.gz" "http://127.0.0.1:$6/debug/pprof/allocs"
	fi
	if [ -n "${5:-}" ] && grep -q "Non-2xx" <<<"$out"; then
		echo "$1: some answers were not 2xx:" >&2
		echo "$out" >&2
		exit 1
	fi
	local rps p50 p99 n cpu=""
	parse_wrk "$out"
	if [ -n "${5:-}" ] && [ "${n:-0}" -gt 0 ]; then
		cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" -v m=$((m1 - m0)) \
			'BEGIN {printf "   cpu %6.1f us/req   %5.1f allocs/req", t / hz / n * 1e6, m / n}')
	fi
	printf '%-34s %12s req/s   p50 %9s   p99 %9s%s\n' "$1" "$rps" "$p50" "$p99" "$cpu"
	last_rps=$rps
}

echo "machine: $(nproc) cores, $(cpu_model), $(go_version)"
echo "load: wrk, $DURATION per run; load average $(loadavg)"
echo
# alternate NAME CONNS: the pass-through pair, run baseline, mediagw, mediagw, baseline, so that
# drift on a shared machine weighs on both sides alike.
alternate() {
	local base="http://127.0.0.1:$BASE/v1/chat/completions" gw="http://127.0.0.1:$GW/v1/chat/completions"
	echo "== pass-through chat (POST /v1/chat/completions), $1"
	load "baseline reverse_proxy" "$base" "$work/chat.lua" "$2" "$base_pid" $BASE_ADMIN
	load "mediagw auth+route+reverse_proxy" "$gw" "$work/chat.lua" "$2" "$gw_pid" $GW_ADMIN
	PROF=${3:-} load "mediagw auth+route+reverse_proxy" "$gw" "$work/chat.lua" "$2" "$gw_pid" $GW_ADMIN
	load "baseline reverse_proxy" "$base" "$work/chat.lua" "$2" "$base_pid" $BASE_ADMIN
}
# Warm both proxies up first (connection pools, heap size) without measuring.
warm 1 "$CONNS" "$work/chat.lua" "http://127.0.0.1:$BASE/v1/chat/completions" "http://127.0.0.1:$GW/v1/chat/completions"
alternate "$CONNS connections" "$CONNS" 1
alternate "1 connection (latency)" 1
echo "usage records written by the gateway so far: $(wc -l <"$work/usage.log")"
if [ -n "$PROFILE" ]; then
	echo "profiles of the second 32-connection mediagw run: $PROFILE/cpu.pb.gz, allocations: go tool pprof -sample_index=alloc_objects -diff_base $PROFILE/allocs-before.pb.gz ./caddy $PROFILE/allocs-after.pb.gz"
fi
[ "$ONLY" = passthrough ] && exit 0

# Task create: the baseline first, then the gateway, once each. (Not alternated like the
# pass-through pairs: after a create run the gateway's watcher keeps polling every task it
# created, on the core the baseline shares, so a baseline run after it would be slowed by the
# gateway's work.) Both print their CPU time and allocations per request.
echo "== video task create (POST …/tasks), $CONNS connections"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks" "$work/create.lua" "$CONNS" "$base_pid" $BASE_ADMIN
b1=$last_rps
load "mediagw create (fsync'd record)" "http://127.0.0.1:$GW/api/v3/contents/generations/tasks" "$work/create.lua" "$CONNS" "$gw_pid" $GW_ADMIN
awk -v b="$b1" -v g="$last_rps" 'BEGIN {printf "task create: mediagw / baseline = %.3f\n", g / b}'

id=$(newtask "http://127.0.0.1:$GW/api/v3/contents/generations/tasks")
echo "== video task query (GET …/tasks/$id), $CONNS connections"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks/$id" "$work/get.lua" "$CONNS"
load "mediagw query" "http://127.0.0.1:$GW/api/v3/contents/generations/tasks/$id" "$work/get.lua" "$CONNS"

echo "== 200 MB multipart upload through mediagw_route (model field after the file)"
taskset -c 1 bench/rss/rss -url "http://127.0.0.1:$GW/v1/audio/transcriptions" -key "$KEY" -model bench-whisper -pid "$gw_pid" -size $((200 << 20))
echo "== 200 MB SSE answer through mediagw_route + reverse_proxy"
taskset -c 1 bench/rss/rss -mode sse -listen "127.0.0.1:$SSE" -url "http://127.0.0.1:$GW/v1/chat/completions" -key "$KEY" -model bench-sse -pid "$gw_pid" -size $((200 << 20))

echo "== task watcher: 3000 unfinished tasks, interval 5s, max_rps 1000 (in-process, simulator upstream)"
go run ./bench/watcher -tasks 3000 -interval 5s -rps 1000 -duration 25s
