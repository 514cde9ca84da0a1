#!/usr/bin/env bash
# mediagw on Redis, beside the same gateway on Badger and plain reverse_proxy, in one run; then
# one gateway against three behind a Caddy load balancer, all on the same Redis. See
# bench/README.md ("Redis store") for the figures.
#
#   bench/instances.sh                 # 10 s per load run
#   DURATION=30s bench/instances.sh
#
# Everything runs on loopback; every load run is bounded by DURATION. redis-server is Debian's
# (installed with apt-get when missing), with appendonly yes and appendfsync always.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
if ! command -v wrk >/dev/null 2>&1; then
	apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi
if ! command -v redis-server >/dev/null 2>&1; then
	apt-get install -y -qq redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
fi
./xcaddy.sh

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

UP=19200 SIM=19201 BASE=19202 BASE_SIM=19203 GWB=19204 GWR=19205 LB=19206 REDIS=19207
GW1=19211 GW2=19212 GW3=19213
KEY=mg-bench-key

redis-server --port $REDIS --bind 127.0.0.1 --dir "$work" --save '' --appendonly yes \
	--appendfsync always --daemonize no --logfile "$work/redis.log" &
pids+=($!)

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
http://127.0.0.1:$BASE {
	reverse_proxy 127.0.0.1:$UP
}
http://127.0.0.1:$BASE_SIM {
	reverse_proxy 127.0.0.1:$SIM
}
CFG

# gateway STORAGE PORT: one gateway's Caddyfile.
gateway() {
	cat <<CFG
{
	admin off
	persist_config off
	mediagw {
		$1
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
http://127.0.0.1:$2 {
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
}
gateway "storage badger $work/badger" $GWB >"$work/gw-badger.caddy"
gateway "storage redis redis://127.0.0.1:$REDIS { 
			key_prefix single
		}" $GWR >"$work/gw-redis.caddy"
for p in $GW1 $GW2 $GW3; do
	gateway "storage redis redis://127.0.0.1:$REDIS {
			key_prefix fleet
		}" $p >"$work/gw-$p.caddy"
done
cat >"$work/lb.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$LB {
	reverse_proxy 127.0.0.1:$GW1 127.0.0.1:$GW2 127.0.0.1:$GW3 {
		lb_policy round_robin
	}
}
CFG

for _ in $(seq 100); do redis-cli -p $REDIS ping >/dev/null 2>&1 && break; sleep 0.1; done
start() { # config
	./caddy run --config "$1" --adapter caddyfile >"$1.log" 2>&1 &
	pids+=($!)
}
for c in upstream gw-badger gw-redis gw-$GW1 gw-$GW2 gw-$GW3 lb; do start "$work/$c.caddy"; done
for port in $UP $SIM $BASE $BASE_SIM $GWB $GWR $GW1 $GW2 $GW3 $LB; do
	for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
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

# load NAME URL SCRIPT: one wrk run, printed as "NAME req/s p50 p99".
load() {
	local out rps p50 p99
	out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$3" "$2")
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	printf '%-40s %12s req/s   p50 %9s   p99 %9s\n' "$1" "$rps" "$p50" "$p99"
}
newtask() { # port
	curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"model":"bench-video","content":[{"type":"text","text":"query me"}]}' \
		"http://127.0.0.1:$1/api/v3/contents/generations/tasks" | sed 's/.*"id":"\([^"]*\)".*/\1/'
}

echo "machine: $(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//'), $(go version | cut -d' ' -f3), $(redis-server --version | cut -d' ' -f3)"
echo "load: wrk -t1 -c$CONNS, $DURATION per run; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for url in "http://127.0.0.1:$BASE/v1/chat/completions" "http://127.0.0.1:$GWB/v1/chat/completions" "http://127.0.0.1:$GWR/v1/chat/completions"; do
	wrk -t1 -c"$CONNS" -d3s -s "$work/chat.lua" "$url" >/dev/null
done
echo "== pass-through chat"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE/v1/chat/completions" "$work/chat.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/v1/chat/completions" "$work/chat.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/v1/chat/completions" "$work/chat.lua"
echo "== video task create"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks" "$work/create.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/api/v3/contents/generations/tasks" "$work/create.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks" "$work/create.lua"
echo "== video task query"
idb=$(newtask $GWB) idr=$(newtask $GWR)
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/api/v3/contents/generations/tasks/$idb" "$work/get.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
echo "== one gateway against three behind a Caddy load balancer (same Redis)"
idf=$(newtask $GW1)
load "create, 1 gateway (redis)" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks" "$work/create.lua"
load "create, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/api/v3/contents/generations/tasks" "$work/create.lua"
load "query, 1 gateway (redis)" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
load "query, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/api/v3/contents/generations/tasks/$idf" "$work/get.lua"
load "chat, 1 gateway (redis)" "http://127.0.0.1:$GWR/v1/chat/completions" "$work/chat.lua"
load "chat, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/v1/chat/completions" "$work/chat.lua"
grep -h "could lose\|can lose" "$work"/*.log || echo "no persistence warning (appendonly yes, appendfsync always)"
