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
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
ONLY=${ONLY:-}
PROFILE=${PROFILE:-}
if ! command -v wrk >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
	apt-get update -qq && apt-get install -y -qq wrk jq >/dev/null
fi
./xcaddy.sh
go build -o bench/rss/rss ./bench/rss

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

UP=19100 SIM=19101 BASE=19102 BASE_SIM=19103 GW=19104 SSE=19105 BASE_ADMIN=19106 GW_ADMIN=19107
KEY=mg-bench-key

cat >"$work/upstream.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$UP {
	respond /v1/chat/completions \`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\` 200
}
http://127.0.0.1:$SIM {
	mediagw_simulator {
		queued_for 1h
	}
}
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
	log usage {
		output mediagw_buffered {
			output file $work/usage.log {
				roll_disabled
			}
		}
		format json
		include mediagw.usage
	}
	log default {
		exclude mediagw.usage
	}
	mediagw {
		storage badger $work/store
		provider chat {
			base_url http://127.0.0.1:$UP/v1
			api_key upstream-key
			models bench-chat
		}
		provider sim {
			base_url http://127.0.0.1:$SIM/api/v3
			api_key upstream-key
			models bench-video
		}
		provider sim-openai {
			base_url http://127.0.0.1:$SIM/v1
			api_key upstream-key
			models bench-whisper
		}
		provider sse {
			base_url http://127.0.0.1:$SSE/v1
			api_key upstream-key
			models bench-sse
		}
		key $KEY {
			account bench
		}
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

start() { # cpu config
	taskset -c "$1" ./caddy run --config "$2" --adapter caddyfile >"$2.log" 2>&1 &
	pids+=($!)
}
start 1 "$work/upstream.caddy"
start 0 "$work/baseline.caddy"
start 0 "$work/gateway.caddy"
base_pid=${pids[1]} gw_pid=${pids[2]}
for port in $UP $SIM $BASE $BASE_SIM $GW; do
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done

cat >"$work/chat.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
cat >"$work/create.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"model":"bench-video","content":[{"type":"text","text":"a lighthouse at dawn"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
cat >"$work/get.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $KEY"
LUA

# cputicks PID: the CPU time (user + system, in clock ticks) the process has used.
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# mallocs PORT: the heap allocations the proxy with that admin port has made so far.
mallocs() { curl -sf "http://127.0.0.1:$1/debug/vars" | jq '.memstats.Mallocs'; }

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
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	n=$(awk '/requests in/ {print $1}' <<<"$out")
	if [ -n "${5:-}" ] && [ "${n:-0}" -gt 0 ]; then
		cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" -v m=$((m1 - m0)) \
			'BEGIN {printf "   cpu %6.1f us/req   %5.1f allocs/req", t / hz / n * 1e6, m / n}')
	fi
	printf '%-34s %12s req/s   p50 %9s   p99 %9s%s\n' "$1" "$rps" "$p50" "$p99" "$cpu"
}

echo "machine: $(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//'), $(go version | cut -d' ' -f3)"
echo "load: wrk, $DURATION per run; load average $(cut -d' ' -f1-3 /proc/loadavg)"
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
for url in "http://127.0.0.1:$BASE/v1/chat/completions" "http://127.0.0.1:$GW/v1/chat/completions"; do
	taskset -c 1 wrk -t1 -c"$CONNS" -d3s -s "$work/chat.lua" "$url" >/dev/null
done
alternate "$CONNS connections" "$CONNS" 1
alternate "1 connection (latency)" 1
echo "usage records written by the gateway so far: $(wc -l <"$work/usage.log")"
if [ -n "$PROFILE" ]; then
	echo "profiles of the second 32-connection mediagw run: $PROFILE/cpu.pb.gz, allocations: go tool pprof -sample_index=alloc_objects -diff_base $PROFILE/allocs-before.pb.gz ./caddy $PROFILE/allocs-after.pb.gz"
fi
[ "$ONLY" = passthrough ] && exit 0

echo "== video task create (POST …/tasks), $CONNS connections"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks" "$work/create.lua" "$CONNS"
load "mediagw create (fsync'd record)" "http://127.0.0.1:$GW/api/v3/contents/generations/tasks" "$work/create.lua" "$CONNS"

id=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
	-d '{"model":"bench-video","content":[{"type":"text","text":"query me"}]}' \
	"http://127.0.0.1:$GW/api/v3/contents/generations/tasks" | sed 's/.*"id":"\([^"]*\)".*/\1/')
echo "== video task query (GET …/tasks/$id), $CONNS connections"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks/$id" "$work/get.lua" "$CONNS"
load "mediagw query" "http://127.0.0.1:$GW/api/v3/contents/generations/tasks/$id" "$work/get.lua" "$CONNS"

echo "== 200 MB multipart upload through mediagw_route (model field after the file)"
taskset -c 1 bench/rss/rss -url "http://127.0.0.1:$GW/v1/audio/transcriptions" -key "$KEY" -model bench-whisper -pid "$gw_pid" -size $((200 << 20))
echo "== 200 MB SSE answer through mediagw_route + reverse_proxy"
taskset -c 1 bench/rss/rss -mode sse -listen "127.0.0.1:$SSE" -url "http://127.0.0.1:$GW/v1/chat/completions" -key "$KEY" -model bench-sse -pid "$gw_pid" -size $((200 << 20))

echo "== task watcher: 3000 unfinished tasks, interval 5s, max_rps 1000 (in-process, simulator upstream)"
go run ./bench/watcher -tasks 3000 -interval 5s -rps 1000 -duration 25s
