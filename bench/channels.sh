#!/usr/bin/env bash
# Pass-through over two upstreams behind one provider (mediagw's upstream source and transport)
# beside plain Caddy reverse_proxy over the same two upstreams, measured in the same run. See
# bench/README.md ("Two upstreams behind one provider").
#
#   bench/channels.sh                 # 10 s per load run
#   DURATION=30s bench/channels.sh
#   USAGE_LOG=default bench/channels.sh   # usage records in the default log (stderr, one write
#                                         # each), as this script ran before session 4
#
# The gateway routes its usage records as bench/run.sh's does and the README recommends: to their
# own file through mediagw_buffered, out of the default log.
#
# Everything runs on loopback. The gateway and the baseline are pinned to CPU 0, wrk and the
# upstreams to CPU 1. Every load run is bounded by DURATION.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
USAGE_LOG=${USAGE_LOG:-file}
need wrk jq
./xcaddy.sh

workdir

UPA=19200 UPB=19201 BASE=19202 GW=19203 BASE_ADMIN=19204 GW_ADMIN=19205

cat >"$work/upstream.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$UPA, http://127.0.0.1:$UPB {
	respond /v1/chat/completions \`$CHAT_ANSWER\` 200
}
CFG

# Both proxies keep their admin endpoint on loopback: /debug/vars gives the allocations per
# request. It costs nothing per proxied request.
cat >"$work/baseline.caddy" <<CFG
{
	admin 127.0.0.1:$BASE_ADMIN
	persist_config off
}
http://127.0.0.1:$BASE {
	reverse_proxy 127.0.0.1:$UPA 127.0.0.1:$UPB
}
CFG

usage=""
if [ "$USAGE_LOG" != default ]; then
	usage=$(usage_log "$work")
fi
cat >"$work/gateway.caddy" <<CFG
{
	admin 127.0.0.1:$GW_ADMIN
	persist_config off
$usage
	mediagw {
		storage badger $work/store
		provider chat {
			models bench-chat
			upstream a {
				base_url http://127.0.0.1:$UPA/v1
				api_key upstream-key-a
			}
			upstream b {
				base_url http://127.0.0.1:$UPB/v1
				api_key upstream-key-b
			}
		}
$(bench_key)
	}
}
http://127.0.0.1:$GW {
	route {
		mediagw_auth
		mediagw_route
$(transport_proxy 1)
	}
}
CFG

start 1 "$work/upstream.caddy"
start 0 "$work/baseline.caddy"
start 0 "$work/gateway.caddy"
base_pid=${pids[1]} gw_pid=${pids[2]}
wait_ports $UPA $UPB $BASE $GW

write_lua

# load NAME URL CONNS PID ADMIN: one wrk run, printed as "NAME req/s p50 p99", the proxy's CPU
# time per request (which other load on a shared machine disturbs far less than throughput) and
# its heap allocations per request (exact).
load() {
	local out before after m0 m1
	before=$(cputicks "$4") m0=$(mallocs "$5")
	out=$(taskset -c 1 wrk -t1 -c"$3" -d"$DURATION" --latency -s "$work/chat.lua" "$2")
	after=$(cputicks "$4") m1=$(mallocs "$5")
	if grep -q "Non-2xx" <<<"$out"; then
		echo "$1: some answers were not 2xx:" >&2
		echo "$out" >&2
		exit 1
	fi
	local rps p50 p99 n cpu allocs
	parse_wrk "$out"
	cpu=$(cpu_us "$before" "$after" "$n" %.1f)
	allocs=$(awk -v m=$((m1 - m0)) -v n="$n" 'BEGIN {if (n > 0) printf "%.1f", m / n}')
	printf '%-44s %12s req/s   p50 %9s   p99 %9s   cpu %6s us/req   %5s allocs/req\n' "$1" "$rps" "$p50" "$p99" "$cpu" "$allocs"
}

echo "machine: $(nproc) cores, $(cpu_model), $(go_version), load average $(loadavg)"
echo "load: wrk, $DURATION per run; usage records: $USAGE_LOG"
base="http://127.0.0.1:$BASE/v1/chat/completions" gw="http://127.0.0.1:$GW/v1/chat/completions"
# Both answer before anything is measured (and the gateway's answer is the upstream's).
curl -sf -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"model":"bench-chat","messages":[]}' "$gw" | grep -q chatcmpl-1
# Warm both up (connection pools, heap size) without measuring.
warm 1 "$CONNS" "$work/chat.lua" "$base" "$gw"
echo "== pass-through chat over two upstreams, $CONNS connections (baseline, mediagw, mediagw, baseline)"
load "baseline reverse_proxy (2 upstreams, random)" "$base" "$CONNS" "$base_pid" $BASE_ADMIN
load "mediagw auth+route+dynamic+transport" "$gw" "$CONNS" "$gw_pid" $GW_ADMIN
load "mediagw auth+route+dynamic+transport" "$gw" "$CONNS" "$gw_pid" $GW_ADMIN
load "baseline reverse_proxy (2 upstreams, random)" "$base" "$CONNS" "$base_pid" $BASE_ADMIN
if [ "$USAGE_LOG" != default ]; then
	echo "usage records written by the gateway so far: $(wc -l <"$work/usage.log")"
fi
