#!/usr/bin/env bash
# Instructions per pass-through request, counted by valgrind's callgrind: plain reverse_proxy,
# the unpriced gateway and the priced one (a chat completion, as run.sh's pass-through runs).
# Unlike throughput and CPU time, an instruction count does not move with the VM's speed or with
# other work on the machine, so two builds can be compared on a busy machine; it does not see
# cache misses, the kernel's work or waiting, so it is a companion to run.sh, not a replacement.
#
#   bench/instructions.sh                    # ./caddy (built first), 2,000 requests each
#   N=5000 bench/instructions.sh             # more requests per count
#   OLD_CADDY=/tmp/caddy-old bench/instructions.sh   # also another build, for an A/B
#   PORT_BASE=19700 bench/instructions.sh    # loopback ports 19700-19702 (default 19370-19372)
#
# Each gateway runs under callgrind with GOMAXPROCS=1 and asynchronous preemption off (fewer
# runtime paths to count), takes 500 requests of warm-up with counting off, then N counted
# requests from hey (8 connections). The count covers every thread of the process: the
# runtime's and Badger's background work per request is in it. Counts of the same build differ
# by about 2 % from run to run (the goroutines' interleaving and the collector's timing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need valgrind hey jq
N=${N:-2000}
P=${PORT_BASE:-19370}
UP=$P GW=$((P + 1)) ADMIN=$((P + 2))
ports_free $UP $GW $ADMIN
./xcaddy.sh >/dev/null
workdir

cat >"$work/upstream.caddy" <<CFG
{
	admin off
	persist_config off
}
http://127.0.0.1:$UP {
	respond /v1/chat/completions \`$CHAT_ANSWER\` 200
}
CFG
start "" "$work/upstream.caddy"

# config NAME: the Caddyfile of one proxy: baseline, mediagw or priced.
config() {
	if [ "$1" = baseline ]; then
		printf '{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n}\nhttp://127.0.0.1:%s {\n\treverse_proxy 127.0.0.1:%s\n}\n' "$ADMIN" "$GW" "$UP"
		return
	fi
	cat <<CFG
{
	admin 127.0.0.1:$ADMIN
	persist_config off
$(usage_log "$work/$1")
	mediagw {
		storage badger $work/$1/store
$(provider chat "http://127.0.0.1:$UP/v1" bench-chat)
$(bench_key)
$([ "$1" != priced ] || printf '\t\tcurrency USD\n\t\tprice bench-chat {\n\t\t\tinput_tokens 0.15\n\t\t\toutput_tokens 0.60\n\t\t}\n')
	}
}
http://127.0.0.1:$GW {
$(gateway_handlers "${routes:-}")
$(transport_proxy)
}
CFG
}

body='{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}'
# load COUNT: COUNT chat completions through the proxy; stops the script unless all are 200.
# warm_up COUNT: the same, not checked (a proxy just started under valgrind may drop the first).
warm_up() { hey -n "$1" -c 8 -m POST -T application/json -H "Authorization: Bearer $KEY" -d "$body" \
	"http://127.0.0.1:$GW/v1/chat/completions" >/dev/null; }
load() {
	local out
	out=$(hey -n "$1" -c 8 -m POST -T application/json -H "Authorization: Bearer $KEY" -d "$body" \
		"http://127.0.0.1:$GW/v1/chat/completions")
	grep -q "\[200\]	$1 responses" <<<"$out" || { echo "not every request answered 200:" >&2; grep -A4 'Status code' <<<"$out" >&2; exit 1; }
}

# count CADDY NAME: one proxy under callgrind; prints its instructions per request. Another build
# than ./caddy (OLD_CADDY) gets the handlers of builds before session 27 (gateway_handlers
# matched), unless OLD_ROUTES=example.
count() {
	mkdir -p "$work/$2"
	local routes=""
	[ "$1" = ./caddy ] || routes=${OLD_ROUTES:-matched}
	[ "$routes" != example ] || routes=""
	routes=$routes config "$2" >"$work/$2.caddy"
	GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$work/$2/callgrind.out" \
		"$1" run --config "$work/$2.caddy" --adapter caddyfile >"$work/$2.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	WAIT_TRIES=600 wait_ports $GW
	[ "$2" != priced ] || credit_bench $ADMIN
	warm_up 500
	callgrind_control -i on "$pid" >/dev/null 2>&1
	load "$N"
	callgrind_control -d "$pid" >/dev/null 2>&1
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	local total # the dump's own file (.1); the one written at exit counts the shutdown
	total=$(awk '/^summary:/ {print $2; exit}' "$work/$2/callgrind.out.1")
	printf '%-34s %9d instructions per request\n' "$(basename "$1") $2" $((total / N))
}

echo "machine: $(nproc) cores, $(cpu_model), $(go_version); $N requests per count"
for caddy in ./caddy ${OLD_CADDY:+"$OLD_CADDY"}; do
	for name in baseline mediagw priced; do
		count "$caddy" "$name"
	done
done
