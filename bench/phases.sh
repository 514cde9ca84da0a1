#!/usr/bin/env bash
# Task create after pass-through traffic: one gateway (the bench/run.sh configuration: metrics,
# usage records through mediagw_buffered), loaded in phases, each bounded by its duration:
# pass-through chat (PASS), then task create (CREATE), then task query (QUERY); a phase of 0 is
# skipped. For each phase it prints the gateway's CPU time per request (user + system from
# /proc/PID/stat) and, with perf installed, its disk syncs per request (fdatasync + msync + fsync
# system calls): figures that other load on a shared machine disturbs far less than throughput.
# Compare a create phase after PASS=30s with one after PASS=0 to see whether earlier
# pass-through traffic slows creates. With PROF=FILE, a CPU profile of 8 s of the create phase is
# written to FILE (go tool pprof ./caddy FILE).
#
#   bench/phases.sh                          # PASS=0 CREATE=10s QUERY=0
#   PASS=30s CREATE=10s QUERY=10s bench/phases.sh
#   CADDY=/tmp/caddy-old PASS=30s bench/phases.sh
#
# Loopback only. The gateway is pinned to CPU 0, wrk and the upstreams to CPU 1.
set -euo pipefail
cd "$(dirname "$0")/.."
PASS=${PASS:-0} CREATE=${CREATE:-10s} QUERY=${QUERY:-0}
CADDY=${CADDY:-./caddy}
[ "$CADDY" != ./caddy ] || ./xcaddy.sh
command -v wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
UP=19400 SIM=19401 GW=19404 ADMIN=19405 KEY=mg-bench-key
cat >"$work/up.caddy" <<CFG
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
cat >"$work/gw.caddy" <<CFG
{
	admin 127.0.0.1:$ADMIN
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
		reverse_proxy 127.0.0.1:$SIM
	}
}
CFG
taskset -c 1 "$CADDY" run --config "$work/up.caddy" --adapter caddyfile >"$work/up.log" 2>&1 & pids+=($!)
taskset -c 0 "$CADDY" run --config "$work/gw.caddy" --adapter caddyfile >"$work/gw.log" 2>&1 & pids+=($!)
gw=${pids[1]}
for port in $UP $SIM $GW; do
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done
body() { printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer %s"\n' "$1" "$KEY"; }
body "'{\"model\":\"bench-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}'" >"$work/chat.lua"
body "'{\"model\":\"bench-video\",\"content\":[{\"type\":\"text\",\"text\":\"a lighthouse at dawn\"}]}'" >"$work/create.lua"
printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$KEY" >"$work/get.lua"
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# phase NAME URL SCRIPT DURATION
phase() {
	local out before after n perf="" syncs=""
	if command -v perf >/dev/null 2>&1; then
		perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_msync,syscalls:sys_enter_fsync \
			-p "$gw" -o "$work/perf" 2>/dev/null &
		perf=$!
	fi
	before=$(cputicks "$gw")
	out=$(taskset -c 1 wrk -t1 -c32 -d"$4" --latency -s "$3" "$2")
	after=$(cputicks "$gw")
	if [ -n "$perf" ]; then
		kill -INT "$perf" && wait "$perf" || true
		syncs=$(awk -F, '/syscalls/ {s += $1} END {print s + 0}' "$work/perf" 2>/dev/null || echo 0)
	fi
	if grep -q Non-2xx <<<"$out"; then echo "$1: $(grep Non-2xx <<<"$out")" >&2; exit 1; fi
	n=$(awk '/requests in/ {print $1}' <<<"$out")
	printf '%-8s %8s requests %10s req/s   p50 %9s   cpu %7.1f us/req%s\n' "$1" "$n" \
		"$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" \
		"$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {print t / hz / n * 1e6}')" \
		"${syncs:+$(awk -v s="$syncs" -v n="$n" 'BEGIN {printf "   disk syncs %.3f/req", s / n}')}"
}
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); PASS=$PASS CREATE=$CREATE QUERY=$QUERY"
tasks=http://127.0.0.1:$GW/api/v3/contents/generations/tasks
[ "$PASS" = 0 ] || phase pass "http://127.0.0.1:$GW/v1/chat/completions" "$work/chat.lua" "$PASS"
if [ "$CREATE" != 0 ]; then
	prof=""
	if [ -n "${PROF:-}" ]; then
		(sleep 1; curl -s -o "$PROF" "http://127.0.0.1:$ADMIN/debug/pprof/profile?seconds=8") &
		prof=$!
	fi
	phase create "$tasks" "$work/create.lua" "$CREATE"
	[ -z "$prof" ] || wait "$prof"
fi
if [ "$QUERY" != 0 ]; then
	id=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"model":"bench-video","content":[{"type":"text","text":"query me"}]}' "$tasks" | sed 's/.*"id":"\([^"]*\)".*/\1/')
	phase query "$tasks/$id" "$work/get.lua" "$QUERY"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
