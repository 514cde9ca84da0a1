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
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
need wrk redis-server
./xcaddy.sh

workdir

UP=19200 SIM=19201 BASE=19202 BASE_SIM=19203 GWB=19204 GWR=19205 LB=19206 REDIS=19207
GW1=19211 GW2=19212 GW3=19213

redis-server --port $REDIS --bind 127.0.0.1 --dir "$work" --save '' --appendonly yes \
	--appendfsync always --daemonize no --logfile "$work/redis.log" &
pids+=($!)

cat >"$work/upstream.caddy" <<CFG
{
	admin off
	persist_config off
}
$(upstream_sites $UP $SIM)
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
$(provider chat "http://127.0.0.1:$UP/v1" bench-chat)
$(provider sim "http://127.0.0.1:$SIM/api/v3" bench-video)
$(bench_key)
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
		}" "$p" >"$work/gw-$p.caddy"
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
# Nothing is pinned here: the gateways and the load balancer share both CPUs.
for c in upstream gw-badger gw-redis gw-$GW1 gw-$GW2 gw-$GW3 lb; do start "" "$work/$c.caddy"; done
WAIT_TRIES=200 wait_ports $UP $SIM $BASE $BASE_SIM $GWB $GWR $GW1 $GW2 $GW3 $LB

write_lua

# load NAME URL SCRIPT: one wrk run, printed as "NAME req/s p50 p99".
load() {
	# shellcheck disable=SC2034 # parse_wrk sets n too
	local out rps p50 p99 n
	out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$3" "$2")
	parse_wrk "$out"
	printf '%-40s %12s req/s   p50 %9s   p99 %9s\n' "$1" "$rps" "$p50" "$p99"
}
task() { newtask "http://127.0.0.1:$1/api/v3/contents/generations/tasks"; } # PORT

echo "machine: $(nproc) cores, $(cpu_model), $(go_version), $(redis-server --version | cut -d' ' -f3)"
echo "load: wrk -t1 -c$CONNS, $DURATION per run; load average before: $(loadavg)"
warm "" "$CONNS" "$work/chat.lua" "http://127.0.0.1:$BASE/v1/chat/completions" "http://127.0.0.1:$GWB/v1/chat/completions" "http://127.0.0.1:$GWR/v1/chat/completions"
echo "== pass-through chat"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE/v1/chat/completions" "$work/chat.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/v1/chat/completions" "$work/chat.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/v1/chat/completions" "$work/chat.lua"
echo "== video task create"
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks" "$work/create.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/api/v3/contents/generations/tasks" "$work/create.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks" "$work/create.lua"
echo "== video task query"
idb=$(task $GWB) idr=$(task $GWR)
load "baseline reverse_proxy" "http://127.0.0.1:$BASE_SIM/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
load "mediagw, badger" "http://127.0.0.1:$GWB/api/v3/contents/generations/tasks/$idb" "$work/get.lua"
load "mediagw, redis" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
echo "== one gateway against three behind a Caddy load balancer (same Redis)"
idf=$(task $GW1)
load "create, 1 gateway (redis)" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks" "$work/create.lua"
load "create, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/api/v3/contents/generations/tasks" "$work/create.lua"
load "query, 1 gateway (redis)" "http://127.0.0.1:$GWR/api/v3/contents/generations/tasks/$idr" "$work/get.lua"
load "query, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/api/v3/contents/generations/tasks/$idf" "$work/get.lua"
load "chat, 1 gateway (redis)" "http://127.0.0.1:$GWR/v1/chat/completions" "$work/chat.lua"
load "chat, LB + 3 gateways (redis)" "http://127.0.0.1:$LB/v1/chat/completions" "$work/chat.lua"
grep -h "could lose\|can lose" "$work"/*.log || echo "no persistence warning (appendonly yes, appendfsync always)"
