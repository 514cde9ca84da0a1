# shellcheck shell=bash
# Start-up and load code shared by the benchmark scripts (run.sh, channels.sh, create.sh,
# instances.sh, instructions.sh, phases.sh). It is sourced, not run:
#
#   . "$(dirname "$0")/lib.sh"
#
# Sourcing it moves to the repository root. Every process started with start (or added to pids)
# is stopped by its PID when the script exits, and the work directory is removed.

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

# KEY is the gateways' API key; CHAT_ANSWER the fixed chat completion the upstreams answer with.
KEY=mg-bench-key
CHAT_ANSWER='{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'

# need TOOL...: installs the tools that are missing with apt-get (each tool's Debian package has
# its name: wrk, jq, redis-server).
need() {
	local t missing=()
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
}

# workdir: makes the temporary directory $work and arranges that on exit every PID in pids is
# stopped and $work removed.
workdir() {
	work=$(mktemp -d)
	pids=()
	trap cleanup EXIT
}
cleanup() {
	local p
	# A process a script paused (kill -STOP) takes SIGTERM only once it runs again.
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}

# pin CPU COMMAND...: runs COMMAND on that CPU (taskset), or unpinned when CPU is empty.
pin() {
	local cpu=$1
	shift
	if [ -n "$cpu" ]; then taskset -c "$cpu" "$@"; else "$@"; fi
}

# start CPU CONFIG: starts a Caddy ($CADDY, default ./caddy) on CPU (empty: unpinned) with the
# Caddyfile CONFIG, its output in CONFIG.log, and adds its PID to pids.
# (Not through pin: $! must be Caddy's own PID, which taskset keeps by exec'ing it, so that
# cputicks measures Caddy and cleanup stops it.)
start() {
	if [ -n "$1" ]; then
		taskset -c "$1" "${CADDY:-./caddy}" run --config "$2" --adapter caddyfile >"$2.log" 2>&1 &
	else
		"${CADDY:-./caddy}" run --config "$2" --adapter caddyfile >"$2.log" 2>&1 &
	fi
	pids+=($!)
}

# ports_free PORT...: stops the script when something already listens on one of these loopback
# ports: most likely another run of a bench script on the same machine. Caddy listens with
# SO_REUSEPORT, so two runs would share the ports, and each would load and measure the other's
# processes too.
ports_free() {
	local port
	for port in "$@"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "port $port is in use (another bench run?); run again later, or with PORT_BASE set to free ports" >&2
			exit 1
		fi
	done
}

# wait_ports PORT...: waits until each loopback port answers HTTP, at most WAIT_TRIES (default
# 100) tenths of a second each.
wait_ports() {
	local port
	for port in "$@"; do
		for _ in $(seq "${WAIT_TRIES:-100}"); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	done
}

# upstream_sites UP SIM: the Caddyfile sites of the upstreams: the fixed chat answer on UP, the
# task simulator (tasks stay queued for an hour) on SIM.
upstream_sites() {
	cat <<CFG
http://127.0.0.1:$1 {
	respond /v1/chat/completions \`$CHAT_ANSWER\` 200
}
http://127.0.0.1:$2 {
	mediagw_simulator {
		queued_for 1h
	}
}
CFG
}

# usage_log DIR: global options that route the usage records to DIR/usage.log through
# mediagw_buffered, and keep them out of the default log.
usage_log() {
	cat <<CFG
	log usage {
		output mediagw_buffered {
			output file $1/usage.log {
				roll_disabled
			}
		}
		format json
		include mediagw.usage
	}
	log default {
		exclude mediagw.usage
	}
CFG
}

# provider NAME BASE_URL MODEL: a provider block inside the mediagw options.
provider() {
	cat <<CFG
		provider $1 {
			base_url $2
			api_key upstream-key
			models $3
		}
CFG
}

# gateway_handlers [matched]: a gateway's mediagw handlers, for a site or route block, before its
# reverse_proxy (run.sh and instructions.sh write them straight in the site block, as
# Caddyfile.example does from session 28 on). By default Caddyfile.example's: every endpoint handler, none behind a matcher
# (each serves only its own paths from session 27 on). With "matched", the line-up that builds
# before session 27 need, whose endpoint handlers answer every request that reaches them:
# mediagw_auth, the task API behind its path matcher, mediagw_route (every run before session 27
# used it; it costs about what the example's line-up costs, both under callgrind).
gateway_handlers() {
	if [ "${1:-}" = matched ]; then
		printf '\t\t%s\n' mediagw_auth 'mediagw_video_tasks /api/v3/contents/generations/tasks*' mediagw_route
	else
		printf '\t\t%s\n' mediagw_auth mediagw_models mediagw_presign mediagw_video_tasks mediagw_videos \
			mediagw_image_edits mediagw_route
	fi
}

# transport_proxy [RETRIES]: a gateway's one reverse_proxy, with the mediagw upstream source and
# transport, as Caddyfile.example has it (lb_retries RETRIES, default 2), for a site or route
# block.
transport_proxy() {
	cat <<CFG
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
			lb_retries ${1:-2}
		}
CFG
}

# bench_key: the key block inside the mediagw options ($KEY, account bench).
bench_key() {
	cat <<CFG
		key $KEY {
			account bench
		}
CFG
}

# bench_prices: price blocks inside the mediagw options for the bench's chat and video models
# (so that every pass-through request and task create holds its estimate and settles it); use
# with credit_bench.
bench_prices() {
	cat <<CFG
		currency USD
		price bench-chat {
			input_tokens 0.15
			output_tokens 0.60
		}
		price bench-video {
			video_tokens 2.50
		}
CFG
}

# credit_bench ADMIN: credits the bench account with 1,000,000 through the admin endpoint on that
# loopback port, which makes the account limited: each hold is then checked against its balance.
# (A chat request holds about 0.0025 and a create 0.2574: the balance outlasts any bench run.)
# It tries for as long as wait_ports waits for a port (a gateway's start can be slow on a loaded
# machine); the credit is idempotent, so a try that was answered late counts once.
credit_bench() {
	for _ in $(seq "${WAIT_TRIES:-100}"); do
		curl -sf -X POST "http://127.0.0.1:$1/mediagw/accounts/bench/credit" -H 'Idempotency-Key: bench' \
			-H 'Content-Type: application/json' -d '{"amount": "1000000", "note": "bench"}' >/dev/null && return 0
		sleep 0.1
	done
	echo "crediting the bench account through the admin endpoint 127.0.0.1:$1 failed" >&2
	return 1
}

# write_lua: the wrk scripts $work/chat.lua (chat completion), $work/create.lua (task create)
# and $work/get.lua (a GET with the key).
write_lua() {
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
}

# warm CPU CONNS SCRIPT URL...: 3 s of wrk load on each URL, not measured (connection pools,
# heap size).
warm() {
	local cpu=$1 conns=$2 script=$3 url
	shift 3
	for url in "$@"; do
		pin "$cpu" wrk -t1 -c"$conns" -d3s -s "$script" "$url" >/dev/null
	done
}

# newtask URL: creates a task through the gateway at URL (…/tasks) and prints its id.
newtask() {
	curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"model":"bench-video","content":[{"type":"text","text":"query me"}]}' \
		"$1" | sed 's/.*"id":"\([^"]*\)".*/\1/'
}

# parse_wrk OUT: sets rps, p50, p99 and n (requests) from wrk --latency output (declare them
# local in the caller).
# shellcheck disable=SC2034 # the caller reads them
parse_wrk() {
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$1")
	p50=$(awk '$1=="50%" {print $2}' <<<"$1")
	p99=$(awk '$1=="99%" {print $2}' <<<"$1")
	n=$(awk '/requests in/ {print $1}' <<<"$1")
}

# cputicks PID: the CPU time (user + system, in clock ticks) the process has used.
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# pagefaults PID: the page faults (minor + major) the process has taken: first touches of fresh
# memory, such as Badger's memtable arenas and mapped logs, and writes to mapped pages a disk
# sync cleaned.
pagefaults() { awk '{print $10 + $12}' "/proc/$1/stat"; }

# cpu_us BEFORE AFTER N [FORMAT]: microseconds of CPU per request from two cputicks readings
# over N requests (printf FORMAT, default %.6g); nothing when N is 0 or empty.
cpu_us() {
	awk -v t=$(($2 - $1)) -v hz="$(getconf CLK_TCK)" -v n="${3:-0}" -v f="${4:-%.6g}" \
		'BEGIN {if (n > 0) printf f, t / hz / n * 1e6}'
}

# mallocs PORT: the heap allocations the Caddy with that admin port has made so far.
mallocs() { curl -sf "http://127.0.0.1:$1/debug/vars" | jq '.memstats.Mallocs'; }

# syncs_start PID: when perf is installed, counts the process's disk syncs (fdatasync, msync and
# fsync system calls) until syncs_stop, which sets syncs (empty without perf).
syncs_start() {
	perf=""
	if command -v perf >/dev/null 2>&1; then
		perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_msync,syscalls:sys_enter_fsync \
			-p "$1" -o "$work/perf" 2>/dev/null &
		perf=$!
	fi
}
syncs_stop() {
	syncs=""
	if [ -n "$perf" ]; then
		if kill -INT "$perf"; then wait "$perf" || true; fi
		syncs=$(awk -F, '/syscalls/ {s += $1} END {print s + 0}' "$work/perf" 2>/dev/null || echo 0)
	fi
}
# syncs_per_req N: "   disk syncs X/req" after syncs_stop, nothing without perf.
syncs_per_req() {
	[ -z "$syncs" ] || awk -v s="$syncs" -v n="$1" 'BEGIN {printf "   disk syncs %.3f/req", s / n}'
}

# cpu_model: the CPU's model name.
cpu_model() { awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//'; }
# go_version: e.g. go1.26.8.
go_version() { go version | cut -d' ' -f3; }
# loadavg: the 1, 5 and 15 minute load averages.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
