#!/usr/bin/env bash
# mediagw benchmarks, each beside a baseline measured in the same run: plain Caddy reverse_proxy
# to the same upstream. See bench/README.md for what is measured and the last results.
#
#   bench/run.sh                 # 10 s per load run
#   DURATION=30s bench/run.sh
#   ONLY=passthrough bench/run.sh            # only the pass-through runs (32 and 1 connections)
#   ROUNDS=5 bench/run.sh                    # five rounds of pass-through runs (default 3)
#   CREATE_ROUNDS=5 bench/run.sh             # five rounds of creates on fresh gateways (default 3)
#   ONLY=create bench/run.sh                 # only the pass-through runs at 32 connections and the
#                                            # task creates
#   PROFILE=/tmp/prof bench/run.sh           # also write the gateway's CPU and allocation profiles
#                                            # of one 32-connection mediagw run into that directory
#   OLD_CADDY=/tmp/caddy-old bench/run.sh    # also run gateways of another build (e.g. the
#                                            # commit before a change), interleaved with ./caddy's
#   PORT_BASE=19500 bench/run.sh             # loopback ports 19500-19513 instead of 19100-19113
#   PROXY=blocks bench/run.sh                # the gateways proxy through one reverse_proxy block per
#                                            # upstream (matched on {mediagw.provider}), not the one
#                                            # reverse_proxy with the mediagw upstream source and
#                                            # transport that Caddyfile.example has (the default)
#   SYSCALLS=1 bench/run.sh                  # also count each proxy's write and read system calls
#                                            # per request (perf stat)
#   FAULTS=/tmp/faults bench/run.sh         # also record where each gateway's page faults are
#                                            # during the runs PROFILE profiles (perf record -g):
#                                            # perf report -i /tmp/faults/NAME.data --no-children
#   WAL_COPY=/tmp/wal bench/run.sh           # copy each gateway's memtable logs (its store's
#                                            # *.mem) into /tmp/wal/NAME after its create run, for
#                                            # go run ./bench/walbytes /tmp/wal/NAME/*.mem
#
# Two gateways of each build run: "mediagw" with no prices (its account never credited, so no
# ledger write), and "priced" with a price for the chat and the video model and its account
# credited, so that every pass-through request and every create holds its estimate against the
# balance and settles or releases it.
#
# Everything runs on loopback. The gateways and the baseline Caddy are pinned to CPU 0; wrk and the
# upstreams to CPU 1, so the proxies get the same CPU budget. Every load run is bounded by
# DURATION; the upload run by its size.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
ROUNDS=${ROUNDS:-3}
CREATE_ROUNDS=${CREATE_ROUNDS:-3}
ONLY=${ONLY:-}
PROFILE=${PROFILE:-}
PROXY=${PROXY:-transport}
SYSCALLS=${SYSCALLS:-}
WAL_COPY=${WAL_COPY:-}
FAULTS=${FAULTS:-}
case $PROXY in
blocks | transport) ;;
*)
	echo "PROXY must be blocks or transport, not $PROXY" >&2
	exit 1
	;;
esac
need wrk jq
if { [ -n "$SYSCALLS" ] || [ -n "$FAULTS" ]; } && ! command -v perf >/dev/null 2>&1; then
	echo "SYSCALLS=1 counts system calls with perf, which is not installed" >&2
	exit 1
fi
./xcaddy.sh
go build -o bench/rss/rss ./bench/rss

workdir

# PORT_BASE (default 19100) and the 13 ports after it; see ports_free.
P=${PORT_BASE:-19100}
UP=$P SIM=$((P + 1)) BASE=$((P + 2)) BASE_SIM=$((P + 3)) GW=$((P + 4)) SSE=$((P + 5)) BASE_ADMIN=$((P + 6)) GW_ADMIN=$((P + 7))
ports_free $(seq "$P" $((P + 13)))

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

# gateway_config PORT ADMIN NAME [priced [matched]]: a gateway with every observability feature on
# and the handlers of gateway_handlers (matched: the line-up of builds before session 27):
# metrics (always counted), and usage records routed to their own file by Caddy's log
# configuration, through mediagw_buffered. Its store and usage log are under $work/NAME. The
# handlers stand in the site block, with no route block, as Caddyfile.example has them (runs
# before session 28 wrapped them in one, which costs a compile of its handlers per request).
gateway_config() {
	mkdir -p "$work/$3"
	cat <<CFG
{
	admin 127.0.0.1:$2
	persist_config off
$(usage_log "$work/$3")
	mediagw {
		storage badger $work/$3/store
$(provider chat "http://127.0.0.1:$UP/v1" bench-chat)
$(provider sim "http://127.0.0.1:$SIM/api/v3" bench-video)
$(provider sim-openai "http://127.0.0.1:$SIM/v1" bench-whisper)
$(provider sse "http://127.0.0.1:$SSE/v1" bench-sse)
$(bench_key)
$([ -z "${4:-}" ] || bench_prices)
	}
}
http://127.0.0.1:$1 {
$(gateway_handlers "${5:-}")
$(proxy_blocks)
}
CFG
}

# proxy_blocks: the gateways' reverse_proxy part. PROXY=transport (the default): one
# reverse_proxy with the mediagw upstream source and transport, as Caddyfile.example and
# docs/providers.md have it; PROXY=blocks (the form of runs before session 10): one
# reverse_proxy per upstream, chosen by matching {mediagw.provider}.
proxy_blocks() {
	if [ "$PROXY" = transport ]; then
		transport_proxy
	else
		cat <<CFG
		@chat vars {mediagw.provider} chat
		reverse_proxy @chat 127.0.0.1:$UP
		@sse vars {mediagw.provider} sse
		reverse_proxy @sse 127.0.0.1:$SSE
		reverse_proxy 127.0.0.1:$SIM
CFG
	fi
}

start 1 "$work/upstream.caddy"
start 0 "$work/baseline.caddy"
base_pid=${pids[1]}
# The gateways: gw_names[i] listens on gw_ports[i] (admin gw_admins[i]) with PID gw_pids[i]. The
# first is ./caddy's unpriced gateway, which the query, upload, SSE and watcher runs use.
gw_names=() gw_ports=() gw_admins=() gw_pids=() gw_caddies=() gw_priced=()
# gateway NAME PORT ADMIN CADDY [priced]: starts one gateway. NAME names its directory under
# $work and appears in its Caddyfile: no spaces. Another build than ./caddy (OLD_CADDY) gets the
# handlers of builds before session 27 (gateway_handlers matched), unless OLD_ROUTES=example.
gateway() {
	local routes=""
	[ "$4" = ./caddy ] || routes=${OLD_ROUTES:-matched}
	[ "$routes" != example ] || routes=""
	gateway_config "$2" "$3" "$1" "${5:-}" "$routes" >"$work/$1.caddy"
	CADDY=$4 start 0 "$work/$1.caddy"
	gw_names+=("$1") gw_ports+=("$2") gw_admins+=("$3") gw_pids+=("${pids[-1]}") gw_caddies+=("$4") gw_priced+=("${5:-}")
}
# fresh_gateways: stops every gateway and starts each again, on the same ports, with an empty
# store (and the priced ones' account credited again).
fresh_gateways() {
	local names=("${gw_names[@]}") ports=("${gw_ports[@]}") admins=("${gw_admins[@]}") caddies=("${gw_caddies[@]}") priced=("${gw_priced[@]}") i
	for i in "${!gw_pids[@]}"; do
		kill -CONT "${gw_pids[$i]}"
		kill "${gw_pids[$i]}"
		wait "${gw_pids[$i]}" || true
		# Moved aside, not removed: removing a store of hundreds of MB makes the file system
		# discard its blocks, in the kernel's time, while the fresh gateways run.
		mv "$work/${names[$i]}" "$(mktemp -u "$work/old-${names[$i]}-XXXXXX")"
	done
	gw_names=() gw_ports=() gw_admins=() gw_pids=() gw_caddies=() gw_priced=()
	for i in "${!names[@]}"; do
		gateway "${names[$i]}" "${ports[$i]}" "${admins[$i]}" "${caddies[$i]}" "${priced[$i]}"
	done
	wait_ports "${gw_ports[@]}"
	for i in "${!gw_names[@]}"; do
		[ -z "${gw_priced[$i]}" ] || credit_bench "${gw_admins[$i]}"
	done
	gw_pid=${gw_pids[0]}
}
gateway mediagw $GW $GW_ADMIN ./caddy
gateway priced $((P + 8)) $((P + 9)) ./caddy priced
if [ -n "${OLD_CADDY:-}" ]; then
	gateway old-mediagw $((P + 10)) $((P + 11)) "$OLD_CADDY"
	gateway old-priced $((P + 12)) $((P + 13)) "$OLD_CADDY" priced
fi
gw_pid=${gw_pids[0]}
wait_ports $UP $SIM $BASE $BASE_SIM "${gw_ports[@]}"
for i in "${!gw_names[@]}"; do
	[[ ${gw_names[$i]} != *priced ]] || credit_bench "${gw_admins[$i]}"
done

write_lua

# load NAME URL SCRIPT CONNS [PID ADMIN]: one wrk run, printed as "NAME req/s p50 p99"; with PID
# and ADMIN (the proxy's admin port), also the proxy's CPU time and heap allocations per request,
# which other load on a shared machine disturbs far less than throughput does. With PROFILE and
# PROF=1 in the environment, the run is profiled (CPU, and allocations over the run) into
# $PROFILE/NAME-cpu.pb.gz and NAME-allocs-{before,after}.pb.gz (spaces in NAME as dashes).
load() {
	local out before=0 after=0 m0=0 m1=0 f0=0 f1=0 prof="" pre=""
	if [ -n "${5:-}" ]; then
		before=$(cputicks "$5") m0=$(mallocs "$6") f0=$(pagefaults "$5")
	fi
	if [ -n "$PROFILE" ] && [ "${PROF:-}" = 1 ]; then
		mkdir -p "$PROFILE"
		pre=$PROFILE/${1// /-}
		curl -sf -o "$pre-allocs-before.pb.gz" "http://127.0.0.1:$6/debug/pprof/allocs"
		curl -sf -o "$pre-cpu.pb.gz" "http://127.0.0.1:$6/debug/pprof/profile?seconds=${DURATION%s}" &
		prof=$!
	fi
	local perf="" faults=""
	if [ -n "${5:-}" ] && [ -n "$SYSCALLS" ]; then
		perf stat -x, -e syscalls:sys_enter_write,syscalls:sys_enter_read -p "$5" -o "$work/calls" 2>/dev/null &
		perf=$!
	fi
	if [ -n "${5:-}" ] && [ -n "$FAULTS" ] && [ "${PROF:-}" = 1 ]; then
		mkdir -p "$FAULTS"
		perf record -q -e page-faults -g -p "$5" -o "$FAULTS/${1// /-}.data" 2>/dev/null &
		faults=$!
	fi
	out=$(taskset -c 1 wrk -t1 -c"$4" -d"$DURATION" --latency -s "$3" "$2")
	if [ -n "${5:-}" ]; then
		after=$(cputicks "$5") m1=$(mallocs "$6") f1=$(pagefaults "$5")
	fi
	if [ -n "$perf" ] && kill -INT "$perf"; then
		wait "$perf" || true
	fi
	if [ -n "$faults" ] && kill -INT "$faults"; then
		wait "$faults" || true
	fi
	if [ -n "$prof" ]; then
		wait "$prof"
		curl -sf -o "$pre-allocs-after.pb.gz" "http://127.0.0.1:$6/debug/pprof/allocs"
	fi
	if [ -n "${5:-}" ] && grep -q "Non-2xx" <<<"$out"; then
		echo "$1: some answers were not 2xx:" >&2
		echo "$out" >&2
		exit 1
	fi
	local rps p50 p99 n cpu=""
	parse_wrk "$out"
	if [ -n "${5:-}" ] && [ "${n:-0}" -gt 0 ]; then
		cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" -v m=$((m1 - m0)) -v f=$((f1 - f0)) \
			'BEGIN {printf "   cpu %6.1f us/req   %5.1f allocs/req   %5.2f faults/req", t / hz / n * 1e6, m / n, f / n}')
		if [ -n "$perf" ]; then
			cpu+=$(awk -F, -v n="$n" '/sys_enter_write/ {w = $1} /sys_enter_read/ {r = $1}
				END {printf "   %.2f writes %.2f reads/req", w / n, r / n}' "$work/calls")
		fi
	fi
	printf '%-34s %12s req/s   p50 %9s   p99 %9s%s\n' "$1" "$rps" "$p50" "$p99" "$cpu"
	last_rps=$rps
}

echo "machine: $(nproc) cores, $(cpu_model), $(go_version)"
echo "load: wrk, $DURATION per run; load average $(loadavg); gateways: ${gw_names[*]}; proxy: $PROXY"
echo
# median X...: the median of the numbers X, to three decimals.
median() {
	echo "$@" | awk '{
		for (i = 1; i <= NF; i++) {
			x = $i + 0
			for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]
			v[j + 1] = x
		}
		n = NF
		printf "%.3f", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2}'
}
# alternate NAME CONNS [PROF]: the pass-through runs, in ROUNDS rounds: each round is each gateway
# in turn, then each again in the reverse order, between two baseline runs (a round's closing
# baseline opens the next), so that drift on a shared machine weighs on every side alike. A
# round's ratio is its gateway's two passes against its two baselines; the figure given is the
# median of the rounds' ratios, so that one round in a slow phase of the host (this VM's own
# CPU per request can change by half within a minute) does not decide it. With PROF=1 the
# second pass of each gateway in the first round is profiled (see load).
alternate() {
	local base="http://127.0.0.1:$BASE/v1/chat/completions" i r order b1 prof pass_rps ratios=() sums=()
	echo "== pass-through chat (POST /v1/chat/completions), $1, $ROUNDS rounds"
	load "baseline reverse_proxy" "$base" "$work/chat.lua" "$2" "$base_pid" $BASE_ADMIN
	order=("${!gw_names[@]}")
	for ((r = 1; r <= ROUNDS; r++)); do
		b1=$last_rps pass_rps=() prof=${3:-}
		[ "$r" = 1 ] || prof=""
		for i in "${order[@]}"; do
			load "${gw_names[$i]} pass-through" "http://127.0.0.1:${gw_ports[$i]}/v1/chat/completions" "$work/chat.lua" "$2" "${gw_pids[$i]}" "${gw_admins[$i]}"
			pass_rps[i]=$last_rps
		done
		for ((i = ${#order[@]} - 1; i >= 0; i--)); do
			PROF=$prof load "${gw_names[$i]} pass-through" "http://127.0.0.1:${gw_ports[$i]}/v1/chat/completions" "$work/chat.lua" "$2" "${gw_pids[$i]}" "${gw_admins[$i]}"
			pass_rps[i]="${pass_rps[i]} $last_rps"
		done
		load "baseline reverse_proxy" "$base" "$work/chat.lua" "$2" "$base_pid" $BASE_ADMIN
		for i in "${order[@]}"; do
			ratios[i]+=" $(awk -v b1="$b1" -v b2="$last_rps" -v g="${pass_rps[$i]}" 'BEGIN {split(g, p, " "); printf "%.3f", (p[1] + p[2]) / (b1 + b2)}')"
			sums[i]=$(awk -v s="${sums[$i]:-0 0}" -v b1="$b1" -v b2="$last_rps" -v g="${pass_rps[$i]}" 'BEGIN {split(s, t, " "); split(g, p, " "); print t[1] + p[1] + p[2], t[2] + b1 + b2}')
		done
	done
	for i in "${order[@]}"; do
		read -r ratio_list <<<"${ratios[$i]}"
		awk -v n="${gw_names[$i]}" -v m="$(median $ratio_list)" -v r="${ratio_list// /, }" -v s="${sums[$i]}" \
			'BEGIN {split(s, t, " "); printf "pass-through: %s / baseline = %.3f (median of the rounds: %s; all passes against all baselines: %.3f)\n", n, m, r, t[1] / t[2]}'
	done
}
# Warm every proxy up first (connection pools, heap size) without measuring.
warm_urls=("http://127.0.0.1:$BASE/v1/chat/completions")
for p in "${gw_ports[@]}"; do warm_urls+=("http://127.0.0.1:$p/v1/chat/completions"); done
warm 1 "$CONNS" "$work/chat.lua" "${warm_urls[@]}"
alternate "$CONNS connections" "$CONNS" 1
[ "$ONLY" = create ] || alternate "1 connection (latency)" 1
echo "usage records written by the first gateway so far: $(wc -l <"$work/mediagw/usage.log")"
if [ -n "$PROFILE" ]; then
	echo "profiles of each gateway's second 32-connection run and its create run in $PROFILE: NAME-cpu.pb.gz; allocations: go tool pprof -sample_index=alloc_objects -diff_base NAME-allocs-before.pb.gz ./caddy NAME-allocs-after.pb.gz"
fi
[ "$ONLY" = passthrough ] && exit 0

# Task create, in CREATE_ROUNDS rounds on fresh gateways (fresh_gateways): each round starts
# every gateway again on an empty store, then runs the baseline and each gateway in turn, a
# baseline run between every two (the order of the gateways reversed in every other round). Fresh,
# because a gateway's store holds the writes of the runs before (the priced one's ledger entries
# of the pass-through: tens of MB), and the memtable flush that they bring forward would fall into
# the next create run. Each fresh gateway is warmed up with 3 s of creates, as every proxy was
# before the pass-through runs. After a create run a gateway's watcher keeps polling every task
# it created; so that it does not take the core from the runs after it, each gateway is paused
# (SIGSTOP) outside its own warm-up and create run. Each run prints its CPU time and allocations
# per request. A round's ratio is the gateway's run against the mean of the baseline runs just
# before and after it; the figure given is the median of the rounds' ratios (each round's is
# printed), so that a slow phase of the host during one run does not decide it. A create run's
# place in the order can weigh more than a change (session 12 saw the second build of an A/B
# cheaper by 50-190 us per create in either order), which the alternating order evens out.
# Each 10 s create run writes about one memtable's worth (32 MiB) into its store, so whether its
# flush falls inside a run is partly chance: DURATION=30s evens that out. Only the first round
# is profiled (PROFILE, FAULTS) and copied (WAL_COPY).
create_url() { echo "http://127.0.0.1:$1/api/v3/contents/generations/tasks"; }
pause_gateways() { for p in "${gw_pids[@]}"; do kill -STOP "$p"; done; }
echo "== video task create (POST …/tasks), $CONNS connections, on fresh gateways, $CREATE_ROUNDS rounds"
create_ratios=()
for ((r = 1; r <= CREATE_ROUNDS; r++)); do
	fresh_gateways
	pause_gateways
	order=("${!gw_names[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#gw_names[@]} - 1; i >= 0; i--)); do order+=("$i"); done
	fi
	prof=1
	[ "$r" = 1 ] || prof=""
	load "baseline reverse_proxy" "$(create_url $BASE_SIM)" "$work/create.lua" "$CONNS" "$base_pid" $BASE_ADMIN
	for i in "${order[@]}"; do
		b1=$last_rps
		kill -CONT "${gw_pids[$i]}"
		warm 1 "$CONNS" "$work/create.lua" "$(create_url "${gw_ports[$i]}")"
		PROF=$prof load "${gw_names[$i]} create" "$(create_url "${gw_ports[$i]}")" "$work/create.lua" "$CONNS" "${gw_pids[$i]}" "${gw_admins[$i]}"
		g=$last_rps
		awk '/^VmRSS|^VmHWM/ {printf "%s %d MiB  ", $1, $2 / 1024} END {print "(resident memory after the create run; VmHWM: its peak since start)"}' "/proc/${gw_pids[$i]}/status"
		kill -STOP "${gw_pids[$i]}"
		if [ -n "$WAL_COPY" ] && [ "$r" = 1 ]; then
			mkdir -p "$WAL_COPY/${gw_names[$i]}"
			cp "$work/${gw_names[$i]}"/store/*.mem "$WAL_COPY/${gw_names[$i]}/"
		fi
		load "baseline reverse_proxy" "$(create_url $BASE_SIM)" "$work/create.lua" "$CONNS" "$base_pid" $BASE_ADMIN
		create_ratios[i]+=" $(awk -v b1="$b1" -v b2="$last_rps" -v g="$g" 'BEGIN {printf "%.3f", 2 * g / (b1 + b2)}')"
	done
done
for i in "${!gw_names[@]}"; do
	read -r ratio_list <<<"${create_ratios[$i]}"
	echo "task create: ${gw_names[$i]} / baseline = $(median $ratio_list) (median of the rounds: ${ratio_list// /, })"
done
for i in "${!gw_pids[@]}"; do
	kill -CONT "${gw_pids[$i]}"
	[ "$i" = 0 ] || kill "${gw_pids[$i]}"
done
[ "$ONLY" = create ] && exit 0

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
