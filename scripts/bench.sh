#!/usr/bin/env bash
# bench.sh — `make bench`: measured performance of dify-mock and the provider.
#
# Builds dify-mock (run with its loopback profiling listener, --pprof-addr),
# the load generator (bench/cmd/loadgen, a separate process) and the
# provider, then measures:
#   1. N concurrent SSE replays of a built-in cassette at speed 1, a fresh
#      server per N: per-frame lateness, time to first event, server RSS,
#      goroutines and threads at peak, bytes/s;
#   2. non-streaming endpoints at concurrency 50: requests/s, p50/p99; then
#      annotation reply with 20,000 annotations: a 100 KB query's latency, and
#      another user's GET /conversations while such queries run;
#   3. CPU profiles of the streaming and the non-streaming hot paths;
#   4. `terraform plan` (refresh) with 1, 10, 100, 1000 conversations: wall time
#      and requests (counted by a proxy in the load generator);
#   5. side by side with its peers (loadgen peers), dify-mock with its default
#      settings and with its load-test settings (--journal=false --log-level
#      warn, as WireMock runs without its journal and request log): WireMock
#      3.13.2 standalone (the jar from the npm package wiremock@3.13.2, run
#      with Java; skipped with a note where Java or the jar is missing) and a
#      bare httprouter handler, on GET /v1/parameters (same bytes, same load,
#      alternating rounds) and one streamed answer (per-frame arrival error);
#   6. the live lane: N concurrent live streams relayed by dify-mock in hybrid
#      mode and by a bare Go relay from a fake upstream with known timing:
#      lateness added against the upstream's writes, RSS per live stream.
# The tables go to stdout and to bench/results.md. bench/README.md explains
# the method and the results.
#
# Environment:
#   BENCH_STREAMS="1 100 1000 5000 10000 50000 100000"  stream counts (a count that the
#                                          open-file limit cannot hold in one process
#                                          is shared out over several dify-mock
#                                          processes, and results.md says so)
#   BENCH_ROUNDS=3                         rounds of each streams and live row, each on fresh
#                                          servers: results.md shows every figure's
#                                          median and worst, the targets take the worst
#   BENCH_CASSETTE=tool-use                built-in cassette replayed
#   BENCH_CASSETTE_LARGE=deep-research     replayed above 20,000 streams: its 116.7 s
#                                          outlast the ramp, so all are live together
#   BENCH_CONNECT_LARGE=400                requests waiting for their first frame at once
#                                          above 20,000 streams (the ramp's pace: about
#                                          520 starts a second)
#   BENCH_SPEED_HUGE=0.4, BENCH_CONNECT_HUGE=1000  above 50,000 streams: the large
#                                          cassette at this speed (deep-research: 291.8 s),
#                                          this many waiting (its first frame at 1.9 s:
#                                          again about 520 starts a second), so the ramp
#                                          of 100,000 (about 190 s) ends before the first
#                                          stream does
#   BENCH_OTHER_WORK=0.5                   the 10,000-stream row again beside `loadgen burn`
#                                          keeping this many cores busy at the servers'
#                                          priority: how the figure moves with other work
#                                          on the machine (0 = no such row)
#   BENCH_APPS=100, BENCH_APPS_STREAMS=10000  the apps row: that many streams spread
#                                          over that many apps of one dify-mock (serve
#                                          --apps, one key each)
#   BENCH_HTTP_DURATION=5s                 measured time per endpoint
#   BENCH_HTTP_CONCURRENCY=50
#   BENCH_PROVIDER_SIZES=1,10,100,1000     conversations in state
#   BENCH_LIVE_STREAMS="100 1000"          the live lane's stream counts: through dify-mock in
#                                          hybrid mode (not saving) and a bare Go relay, each
#                                          in front of a fake upstream on loopback
#   BENCH_LIVE_CASSETTE=tool-use           the turn the fake upstream streams
#   BENCH_LIVE_SAVE_STREAMS=20             the live lane's row with saving on (0 = none)
#   BENCH_LIVE_START_RATE=250              the live lane's largest count again, both relays, with
#                                          the chats started evenly at this many a second
#                                          instead of all at once (0 = no such rows); the
#                                          lateness target judges the row at 250
#   BENCH_SKIP="profile provider"          sections to skip (streams apps http profile provider peers live)
#   BENCH_PEER_ROUNDS=8, BENCH_PEER_DURATION=2s, BENCH_PEER_STREAM_RUNS=10,
#   BENCH_PEER_STREAM_CONCURRENCY=100      the peer comparison's sizes
#   BENCH_PEER_WARMUP=30s                  unmeasured load on each peer before the first round (WireMock's JIT)
#   WIREMOCK_JAR=PATH                      a wiremock-standalone-3.13.2.jar to use (default:
#                                          cached from `npm pack wiremock@3.13.2`)
#   BENCH_RESULTS=bench/results.md         where the markdown goes ("" = stdout only)
#   BENCH_KEEP=1                           keep the work folder (profiles, logs, each stream count's timeline)
#   BENCH_NICE=-10                         run the server and the load generator at this
#                                          niceness (negative needs root), so other work on
#                                          a shared machine disturbs the numbers less
#   TF_ACC_TERRAFORM_PATH, TF_FORCE_BUILD  see scripts/ensure-terraform.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

read -r -a STREAMS <<<"${BENCH_STREAMS:-1 100 1000 5000 10000 50000 100000}"
ROUNDS="${BENCH_ROUNDS:-3}"
CASSETTE="${BENCH_CASSETTE:-tool-use}"
CASSETTE_LARGE="${BENCH_CASSETTE_LARGE:-deep-research}"
CONNECT_LARGE="${BENCH_CONNECT_LARGE:-400}"
SPEED_HUGE="${BENCH_SPEED_HUGE:-0.4}"
CONNECT_HUGE="${BENCH_CONNECT_HUGE:-1000}"
APPS="${BENCH_APPS:-100}"
APPS_STREAMS="${BENCH_APPS_STREAMS:-10000}"
HTTP_DURATION="${BENCH_HTTP_DURATION:-5s}"
HTTP_CONCURRENCY="${BENCH_HTTP_CONCURRENCY:-50}"
PROVIDER_SIZES="${BENCH_PROVIDER_SIZES:-1,10,100,1000}"
RESULTS="${BENCH_RESULTS-bench/results.md}"
read -r -a LIVE_STREAMS <<<"${BENCH_LIVE_STREAMS:-100 1000}"
LIVE_CASSETTE="${BENCH_LIVE_CASSETTE:-tool-use}"
LIVE_SAVE_STREAMS="${BENCH_LIVE_SAVE_STREAMS:-20}"
LIVE_START_RATE="${BENCH_LIVE_START_RATE:-250}"
OTHER_WORK="${BENCH_OTHER_WORK:-0.5}"
SKIP=" ${BENCH_SKIP:-} "

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tf-dify-bench.XXXXXX")"
PEER_PIDS=()
section_notes=()
# stop_peers: ends WireMock, the bare handler and the load-test dify-mock of
# the peers section.
stop_peers() {
	local pid
	for pid in "${PEER_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PEER_PIDS=()
}
# stop_extra_mocks: ends the servers a run over several processes started
# besides the one start_mock tracks.
EXTRA_MOCKS=()
stop_extra_mocks() {
	local pid
	for pid in "${EXTRA_MOCKS[@]}"; do
		MOCK_PID="$pid"
		stop_mock
	done
	EXTRA_MOCKS=()
}

# join_commas ARGS...: the arguments joined by commas.
join_commas() {
	local IFS=,
	printf '%s' "$*"
}
cleanup() {
	stop_mock
	stop_extra_mocks
	stop_peers
	if [[ "${BENCH_KEEP:-0}" == 1 ]]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

want() { [[ "$SKIP" != *" $1 "* ]]; }

NICE=()
priority="default"
if [[ -n "${BENCH_NICE:-}" ]]; then
	# nice(1) runs the command even when it may not change the niceness, so
	# check that it did.
	if [[ "$(nice -n "$BENCH_NICE" nice 2>/dev/null)" == "$(($(nice) + BENCH_NICE))" ]]; then
		NICE=(nice -n "$BENCH_NICE")
		MOCK_PREFIX=("${NICE[@]}") # start_mock (lib.sh) runs the server with it
		priority="nice $BENCH_NICE (server and load generator)"
	else
		warn "BENCH_NICE=$BENCH_NICE: cannot change the niceness (negative values need root); running at the default priority"
	fi
fi

# Every stream is a socket in each process (the server and the load
# generator); leave room for the rest. Root may raise the hard limit (up to
# /proc/sys/fs/nr_open) when it has CAP_SYS_RESOURCE; counts that still do
# not fit are skipped and the report says so (bench/README.md: what a machine
# needs for 50,000 streams).
max_streams=0
for n in "${STREAMS[@]}"; do ((n > max_streams)) && max_streams=$n; done
need=$((max_streams + 1024))
# The other sections' connections need more than 2,048 (below) however few
# streams are asked for: a run of BENCH_STREAMS=1 must not lower the limit.
((need > 4096)) || need=4096
hard="$(ulimit -Hn)"
if [[ "$hard" != unlimited ]] && ((hard < need)); then
	ulimit -Hn "$need" 2>/dev/null || true
	hard="$(ulimit -Hn)"
fi
if [[ "$hard" == unlimited ]] || ((hard >= need)); then
	ulimit -n "$need"
else
	ulimit -n "$hard"
fi
fd_limit="$(ulimit -n)"
if want streams && ((fd_limit < need)); then
	warn "open-file limit $fd_limit is below the $need that $max_streams streams need in one process (raising the hard limit needs root with CAP_SYS_RESOURCE: ulimit -Hn $need); larger counts are shared out over several dify-mock processes"
fi
((fd_limit > 2048)) || die "the open-file limit is $fd_limit; the bench needs more than 2,048 (ulimit -n)"

start=$SECONDS
log "building dify-mock, loadgen and the provider into $WORK"
go build -o "$WORK/dify-mock" ./mockserver/cmd/dify-mock
go build -o "$WORK/loadgen" ./bench/cmd/loadgen
mkdir -p "$WORK/plugins"
go build -o "$WORK/plugins/terraform-provider-dify" .
LOADGEN=("${NICE[@]}" "$WORK/loadgen")
RESULTS_JSON="$WORK/results.jsonl"
: >"$RESULTS_JSON"
loadavg_start="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

# bench_mock SPEED [SERVE FLAGS...]: start_mock (lib.sh) with the profiling
# listener; sets MOCK_PID, MOCK_URL (API base) and DEBUG_URL (--pprof-addr).
bench_mock() {
	local i
	start_mock "$WORK/dify-mock" "$WORK/mock.log" --pprof-addr 127.0.0.1:0 --speed "$1" "${@:2}"
	for ((i = 0; i < 100; i++)); do # the pprof line follows the URL in the banner
		DEBUG_URL="$(tail -c +"$MOCK_LOG_FROM" "$WORK/mock.log" | sed -n 's|^  pprof *\(http://127\.0\.0\.1:[0-9]*\)/debug/pprof/.*|\1|p' | first_line)"
		[[ -n "$DEBUG_URL" ]] && return 0
		sleep 0.1
	done
	die "dify-mock printed no pprof address; see $WORK/mock.log"
}

# stream_rounds N CASSETTE SPEED CONNECT KEYS_FILE [SERVE FLAGS...]: the
# row of N streams, BENCH_ROUNDS times, each round on freshly started
# servers (memory and the store start empty every time); KEYS_FILE ("" =
# none) is loadgen's --keys-file. Every stream is a socket in the server and
# in the load generator: where the open-file limit cannot hold N in one
# process, the streams are shared out over the fewest servers that hold
# them on this machine, each with its own load generator worker (loadgen
# streams --url A,B,C), and measured as one run; results.md says so.
stream_rounds() {
	local n="$1" c="$2" speed="$3" connect="$4" keys="$5" procs round k what
	shift 5
	procs=$(((n + fd_limit - 1024 - 1) / (fd_limit - 1024)))
	what="$n x $c at speed $speed"
	[[ -n "$keys" ]] && what+=" over $(grep -c . "$keys") apps"
	((${#STREAMS_EXTRA[@]} > 0)) && what+=" beside $OTHER_WORK cores of other work"
	if ((procs > 1)); then
		what+=", over $procs dify-mock processes (open-file limit $fd_limit)"
		section_notes+=(--note "Streams: $n shared out over $procs dify-mock processes and as many load generator workers on this machine, measured as one run (server figures summed): the open-file limit here is $fd_limit (bench/README.md says what one process needs)")
	fi
	for ((round = 1; round <= ROUNDS; round++)); do
		urls=() pids=() debugs=()
		for ((k = 0; k < procs; k++)); do
			bench_mock 1 "$@"
			urls+=("$MOCK_URL") pids+=("$MOCK_PID") debugs+=("$DEBUG_URL")
			((k < procs - 1)) && EXTRA_MOCKS+=("$MOCK_PID")
		done
		log "streams: $what, round $round of $ROUNDS"
		"${LOADGEN[@]}" streams --url "$(join_commas "${urls[@]}")" --debug-url "$(join_commas "${debugs[@]}")" --pid "$(join_commas "${pids[@]}")" \
			--streams "$n" --cassette "$c" --speed "$speed" --connect-concurrency "$connect" --round "$round" ${keys:+--keys-file "$keys"} \
			${STREAMS_EXTRA[@]+"${STREAMS_EXTRA[@]}"} \
			--out "$RESULTS_JSON" --timeline "$WORK/timeline-$n${keys:+-apps}-$round.tsv"
		stop_mock
		stop_extra_mocks
	done
}

# apps_row: several apps in one mock (serve --apps DIR: each folder an app
# named after it, its keys.txt its keys): the same streams as the one-app
# row of that count, spread over the apps' keys, to compare lateness and
# memory per stream. It runs right after that one-app row, so that the two
# meet the same machine: run after the 100,000-stream row, its first round
# met a machine still letting go of 100,000 connections and 1.7 GiB, and
# its ramp alone was late (p99 31 ms against 14 ms for the one-app row; on
# their own, minutes later, the two rows were alike; bench/history.md,
# "Performance round seven").
apps_row() {
	local apps_dir apps_keys a name
	if [[ "$("$WORK/dify-mock" serve --help 2>&1 || true)" != *"--apps "* ]]; then
		warn "this dify-mock has no serve --apps: the row of $APPS_STREAMS streams over $APPS apps is skipped"
		section_notes+=(--note "Streams over $APPS apps: not run (this dify-mock has no serve --apps)")
	else
		apps_dir="$WORK/apps" apps_keys="$WORK/apps-keys.txt"
		: >"$apps_keys"
		for ((a = 0; a < APPS; a++)); do
			name="$(printf 'bench-%03d' "$a")"
			mkdir -p "$apps_dir/$name"
			cp cassettes/app.yaml "cassettes/$CASSETTE.yaml" "$apps_dir/$name/"
			printf 'app-%s\n' "$name" | tee "$apps_dir/$name/keys.txt" >>"$apps_keys"
		done
		stream_rounds "$APPS_STREAMS" "$CASSETTE" 1 1000 "$apps_keys" --apps "$apps_dir"
	fi
}

# wait_for_line FILE REGEX PID SECONDS: prints the first match of REGEX
# (sed -E, one group) in FILE once it appears.
wait_for_line() {
	local file="$1" re="$2" pid="$3" secs="$4" i v
	for ((i = 0; i < secs * 10; i++)); do
		v="$(sed -n -E "s|$re|\\1|p" "$file" 2>/dev/null | first_line)"
		[[ -n "$v" ]] && { printf '%s\n' "$v"; return 0; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$file" >&2
	return 1
}

# busy_row N CASSETTE SPEED CONNECT: the row of N streams again, with
# `loadgen burn` keeping OTHER_WORK cores busy beside it at the servers'
# priority, so that its figures say how the lateness moves with other work
# on the machine (issue 47: half a core should not multiply the p99 by
# five). Its rows say so, and only the comparison with the same row
# without it judges them.
STREAMS_EXTRA=()
busy_row() {
	local burn_pid
	${SESSION[@]+"${SESSION[@]}"} "${NICE[@]}" "$WORK/loadgen" burn --cores "$OTHER_WORK" >"$WORK/burn.out" 2>&1 &
	burn_pid=$!
	PEER_PIDS+=("$burn_pid") # cleanup ends it if the run stops here
	wait_for_line "$WORK/burn.out" '^(burning .*)$' "$burn_pid" 10 >/dev/null || die "loadgen burn did not start"
	STREAMS_EXTRA=(--other-work "$OTHER_WORK")
	stream_rounds "$1" "$2" "$3" "$4" ""
	STREAMS_EXTRA=()
	kill -TERM "$burn_pid" 2>/dev/null || true
	wait "$burn_pid" 2>/dev/null || true
	section_notes+=(--note "Other work: $(tail -n 1 "$WORK/burn.out") beside the row of $1 streams marked so (loadgen burn --cores $OTHER_WORK, at the servers' priority)")
}

# The server logs at its default level (info: one line per request), as
# users run it; a panic or error line fails the run below.
apps_done=""
if want streams; then
	for n in "${STREAMS[@]}"; do
		c="$CASSETTE" speed=1 connect=1000
		if ((n > 50000)); then
			# 100,000 live together: the ramp must end before the first
			# stream does, at a pace two vCPUs carry. At about 520 starts
			# a second (the 50,000 row's pace, which held p99 under
			# 100 ms) 100,000 take about 190 s, longer than the research
			# turn's 116.7 s at speed 1; at 0.4 it lasts 291.8 s, and its
			# first frame comes at 1.9 s, so 1,000 waiting keep the same
			# pace. A stream's answer then starts 264 s in, after the ramp,
			# and the answers come at the pace the streams started, as in
			# the 50,000 row: the same writes a second (bench/README.md).
			c="$CASSETTE_LARGE" speed="$SPEED_HUGE" connect="$CONNECT_HUGE"
		elif ((n > 20000)); then
			# All of them live together: the ramp has to end before the
			# first streams do. 400 waiting for their first frame (750 ms
			# in) start about 520 a second, so 50,000 take about 96 s, and
			# the 116.7 s research turn outlasts that. The pace also sets
			# the load: streams reach their answers (a frame pair every
			# 500 ms for 11 s) at the pace they started, and at 790 starts
			# a second (600 waiting, an 88.7 s turn) two vCPUs were saturated
			# once the first streams ended (p99 58-142 ms in four runs).
			# A 31 s turn would need 1,600 starts a second, about three
			# cores (bench/history.md, "Issue 21", eleventh and twelfth
			# rounds).
			c="$CASSETTE_LARGE" connect="$CONNECT_LARGE"
		fi
		stream_rounds "$n" "$c" "$speed" "$connect" ""
		if ((n == APPS_STREAMS)) && want apps && [[ -z "$apps_done" ]]; then
			apps_row
			apps_done=1
		fi
		if ((n == 10000)) && [[ "$OTHER_WORK" != 0 ]]; then
			busy_row "$n" "$c" "$speed" "$connect"
		fi
	done
	if want apps && [[ -z "$apps_done" ]]; then
		apps_row # no one-app row of that count: after the others
	fi
fi

if want http; then
	bench_mock 1
	# conversations-crowded last: it fills the store with 10,000 conversations.
	for ep in parameters conversations rename upload conversations-crowded; do
		"${LOADGEN[@]}" http --url "$MOCK_URL" --debug-url "$DEBUG_URL" --pid "$MOCK_PID" --endpoint "$ep" \
			--concurrency "$HTTP_CONCURRENCY" --duration "$HTTP_DURATION" --out "$RESULTS_JSON"
	done
	stop_mock
	# Annotation reply at scale (docs/mock/annotations.md "Cost"): 20,000
	# annotations, one 100 KB query at a time, then another user's listing
	# while such queries run.
	bench_mock 0
	"${LOADGEN[@]}" http --url "$MOCK_URL" --debug-url "$DEBUG_URL" --pid "$MOCK_PID" --endpoint annotation-chat \
		--concurrency 1 --duration "$HTTP_DURATION" --out "$RESULTS_JSON"
	"${LOADGEN[@]}" http --url "$MOCK_URL" --debug-url "$DEBUG_URL" --pid "$MOCK_PID" --endpoint conversations-during-annotation \
		--concurrency 10 --duration "$HTTP_DURATION" --out "$RESULTS_JSON"
	stop_mock
fi

declare -a profile_args=()
if want profile; then
	# Separate runs, so profiling does not skew the measured rows above.
	bench_mock 1
	log "profiling: 5000 streams"
	"${LOADGEN[@]}" streams --url "$MOCK_URL" --debug-url "$DEBUG_URL" --streams 5000 --cassette "$CASSETTE" \
		--profile "$WORK/streams.pprof" --profile-seconds 10s --out "$WORK/profile-runs.jsonl"
	stop_mock
	bench_mock 1
	log "profiling: GET /conversations, then with 10,000 other conversations stored"
	"${LOADGEN[@]}" http --url "$MOCK_URL" --debug-url "$DEBUG_URL" --endpoint conversations --concurrency "$HTTP_CONCURRENCY" \
		--duration 5s --profile "$WORK/http.pprof" --out "$WORK/profile-runs.jsonl"
	"${LOADGEN[@]}" http --url "$MOCK_URL" --debug-url "$DEBUG_URL" --endpoint conversations-crowded --concurrency "$HTTP_CONCURRENCY" \
		--duration 5s --profile "$WORK/crowded.pprof" --out "$WORK/profile-runs.jsonl"
	stop_mock
	for p in streams http crowded; do
		if [[ -s "$WORK/$p.pprof" ]]; then
			go tool pprof -top -nodecount=25 "$WORK/dify-mock" "$WORK/$p.pprof" 2>/dev/null | sed -n '1,32p' >"$WORK/$p.top" || true
		fi
	done
	[[ -s "$WORK/streams.top" ]] && profile_args+=(--profile-summary "5,000 streams of $CASSETTE (10 s, flat top 25)=$WORK/streams.top")
	[[ -s "$WORK/http.top" ]] && profile_args+=(--profile-summary "GET /conversations at concurrency $HTTP_CONCURRENCY (5 s, flat top 25)=$WORK/http.top")
	[[ -s "$WORK/crowded.top" ]] && profile_args+=(--profile-summary "GET /conversations with 10,000 other conversations stored (5 s, flat top 25)=$WORK/crowded.top")
fi

if want provider; then
	tf_out=""
	if tf_out="$("$REPO_ROOT/scripts/ensure-terraform.sh")"; then
		tf="$(tail -n1 <<<"$tf_out")"
		# Creating the conversations is set-up, not what is measured.
		bench_mock 0
		: >"$WORK/terraformrc-empty"
		# A failure here (Terraform's own output above says why) must not
		# lose the other sections: results.md says it failed.
		if ! TF_CLI_CONFIG_FILE="$WORK/terraformrc-empty" "${LOADGEN[@]}" provider --url "$MOCK_URL" --terraform "$tf" \
			--plugin-dir "$WORK/plugins" --conversations "$PROVIDER_SIZES" --work-dir "$WORK/tf" --out "$RESULTS_JSON"; then
			warn "the provider section failed (above); the other sections go on"
			section_notes+=(--note "Provider section: failed in this run (Terraform's error is in the bench log); rows for the sizes that finished are shown")
		fi
		stop_mock
	else
		warn "no Terraform CLI; the provider section is skipped"
	fi
fi

# --- the peers: WireMock 3.13.2 and a bare httprouter handler ----------------

# wiremock_jar: prints the path of WireMock 3.13.2's standalone jar, taken
# from the npm package wiremock@3.13.2 (the first time: `npm pack`, kept in
# the tool cache), or fails with the reason.
WIREMOCK_VERSION=3.13.2
wiremock_jar() {
	if [[ -n "${WIREMOCK_JAR:-}" ]]; then
		[[ -f "$WIREMOCK_JAR" ]] || { warn "WIREMOCK_JAR=$WIREMOCK_JAR does not exist"; return 1; }
		printf '%s\n' "$WIREMOCK_JAR"
		return 0
	fi
	local dir="$CACHE_DIR/wiremock-$WIREMOCK_VERSION" jar
	jar="$dir/wiremock-standalone-$WIREMOCK_VERSION.jar"
	if [[ ! -f "$jar" ]]; then
		command -v npm >/dev/null 2>&1 || { warn "npm not found: cannot get the wiremock@$WIREMOCK_VERSION package"; return 1; }
		local tmp
		tmp="$(mktemp -d "$WORK/wiremock.XXXXXX")"
		log "getting wiremock@$WIREMOCK_VERSION from the npm registry (once; cached in $dir)"
		(cd "$tmp" && npm pack --silent "wiremock@$WIREMOCK_VERSION" >/dev/null) || { warn "npm pack wiremock@$WIREMOCK_VERSION failed"; return 1; }
		tar -xzf "$tmp"/wiremock-*.tgz -C "$tmp" package/build
		mkdir -p "$dir"
		mv "$tmp/package/build/wiremock-standalone-$WIREMOCK_VERSION.jar" "$jar.new" && mv "$jar.new" "$jar"
	fi
	printf '%s\n' "$jar"
}

peer_notes=()
if want peers; then
	log "peers: dify-mock (default and load-test settings), WireMock $WIREMOCK_VERSION and a bare httprouter handler"
	"$WORK/loadgen" peers-setup --dir "$WORK/peers"
	# dify-mock twice: in its load-test settings, the counterpart of
	# WireMock's below (no request journal, no line per request), and as a
	# developer runs it. The first is stopped with the peers; its log goes
	# into mock.log, which the error check below reads.
	start_mock "$WORK/dify-mock" "$WORK/mock.log" --speed 1 --cassettes "$WORK/peers/cassettes" --journal=false --log-level warn
	PEER_PIDS+=("$MOCK_PID")
	peer_args=(--dify-mock-loadtest "$MOCK_URL" --dify-mock-loadtest-pid "$MOCK_PID")
	bench_mock 1 --cassettes "$WORK/peers/cassettes"
	peer_args+=(--dify-mock "$MOCK_URL" --dify-mock-pid "$MOCK_PID")

	# Every server in its own session, as dify-mock is (start_mock): with the
	# kernel's autogroup scheduling a server in the load generator's session
	# shares its scheduling group, and ran 10-18 % faster against dify-mock
	# than one in a session of its own (history.md, "Issue 21, fifteenth round").
	${SESSION[@]+"${SESSION[@]}"} "${NICE[@]}" "$WORK/loadgen" bare --dir "$WORK/peers" >"$WORK/bare.out" 2>&1 &
	PEER_PIDS+=($!)
	bare_url="$(wait_for_line "$WORK/bare.out" '^bare handler on (http://127\.0\.0\.1:[0-9]+/v1)$' "$!" 20)" ||
		die "the bare handler did not start"
	peer_args+=(--bare "$bare_url" --bare-pid "${PEER_PIDS[-1]}")

	if ! command -v java >/dev/null 2>&1; then
		warn "no Java: WireMock is not measured"
		peer_notes+=(--note "WireMock: not measured (no Java on this machine)")
	elif ! jar="$(wiremock_jar)"; then
		peer_notes+=(--note "WireMock: not measured (its jar could not be obtained from the npm package wiremock@$WIREMOCK_VERSION)")
	else
		# WireMock at its fastest for this work: no request journal or
		# logging, no gzip, asynchronous responses for the dribbled
		# stream, enough Jetty threads for every connection.
		${SESSION[@]+"${SESSION[@]}"} "${NICE[@]}" java -jar "$jar" --port 0 --bind-address 127.0.0.1 --root-dir "$WORK/peers/wiremock" \
			--disable-banner --no-request-journal --disable-request-logging --disable-gzip \
			--async-response-enabled true --container-threads 200 >"$WORK/wiremock.out" 2>&1 &
		PEER_PIDS+=($!)
		wm_port="$(wait_for_line "$WORK/wiremock.out" '^port: +([0-9]+)$' "$!" 180)" || die "WireMock did not start"
		peer_args+=(--wiremock "http://127.0.0.1:$wm_port/v1" --wiremock-pid "${PEER_PIDS[-1]}")
		peer_notes+=(--note "WireMock: $WIREMOCK_VERSION standalone ($(java -version 2>&1 | first_line | tr -d '"'))")
	fi
	"${LOADGEN[@]}" peers "${peer_args[@]}" --concurrency "$HTTP_CONCURRENCY" \
		--rounds "${BENCH_PEER_ROUNDS:-8}" --duration "${BENCH_PEER_DURATION:-2s}" --first-warmup "${BENCH_PEER_WARMUP:-30s}" \
		--stream-runs "${BENCH_PEER_STREAM_RUNS:-10}" --stream-concurrency "${BENCH_PEER_STREAM_CONCURRENCY:-100}" \
		--out "$RESULTS_JSON"
	stop_peers
	stop_mock
fi

# --- the live lane: hybrid mode relaying live streams ------------------------

# A fake upstream (loadgen upstream: a built-in cassette's turn at its
# recorded pace, every write timed) behind dify-mock in hybrid mode, fresh
# for each count, and behind a bare Go relay (loadgen relay), the floor:
# N chats at once, each with a query no recorded turn answers, so all go
# live. dify-mock answers them without saving (--max-new-turns 0); one
# small row saves every turn it answers.
if want live; then
	log "live: dify-mock in hybrid mode and a bare Go relay in front of a fake upstream ($LIVE_CASSETTE)"
	${SESSION[@]+"${SESSION[@]}"} "${NICE[@]}" "$WORK/loadgen" upstream --cassette "$LIVE_CASSETTE" >"$WORK/upstream.out" 2>&1 &
	up_pid=$!
	PEER_PIDS+=("$up_pid")
	up_url="$(wait_for_line "$WORK/upstream.out" '^fake upstream on (http://127\.0\.0\.1:[0-9]+/v1)$' "$up_pid" 20)" ||
		die "the fake upstream did not start"
	# live_mock DIR MAX_NEW_TURNS: dify-mock in hybrid mode serving (and
	# growing) DIR. The fake upstream's key is no secret: it is passed as a
	# flag because start_mock clears the DIFY_MOCK_ environment.
	live_mock() {
		bench_mock 1 --cassettes "$1" --upstream "$up_url" --upstream-key app-bench-upstream --max-new-turns "$2"
	}
	# live_pair N RATE: N chats through a fresh dify-mock, then through a
	# fresh bare relay, BENCH_ROUNDS times (the rows' figures are the
	# rounds' median and worst, as the streams rows'); RATE starts them
	# evenly at RATE a second (0: all at once).
	live_pair() {
		local n="$1" rate="$2" round
		for ((round = 1; round <= ROUNDS; round++)); do
			log "live: $n chats ($([[ "$rate" == 0 ]] && echo "all at once" || echo "$rate starts a second")), round $round of $ROUNDS"
			live_mock "$WORK/live-$n-$rate-$round" 0
			"${LOADGEN[@]}" live --url "$MOCK_URL" --upstream "$up_url" --upstream-pid "$up_pid" --pid "$MOCK_PID" --debug-url "$DEBUG_URL" \
				--streams "$n" --start-rate "$rate" --round "$round" \
				--cassette "$LIVE_CASSETTE" --target dify-mock --saving "off (--max-new-turns 0)" --out "$RESULTS_JSON"
			stop_mock
			${SESSION[@]+"${SESSION[@]}"} "${NICE[@]}" "$WORK/loadgen" relay --upstream "$up_url" >"$WORK/relay.out" 2>&1 &
			relay_pid=$!
			PEER_PIDS+=("$relay_pid") # cleanup ends it if the run stops here
			relay_url="$(wait_for_line "$WORK/relay.out" '^bare relay on (http://127\.0\.0\.1:[0-9]+/v1)$' "$relay_pid" 20)" ||
				die "the bare relay did not start"
			"${LOADGEN[@]}" live --url "$relay_url" --upstream "$up_url" --upstream-pid "$up_pid" --pid "$relay_pid" \
				--streams "$n" --start-rate "$rate" --round "$round" \
				--cassette "$LIVE_CASSETTE" --target "bare Go relay" --out "$RESULTS_JSON"
			kill -TERM "$relay_pid" 2>/dev/null || true
			wait "$relay_pid" 2>/dev/null || true
		done
	}
	for n in "${LIVE_STREAMS[@]}"; do
		live_pair "$n" 0
	done
	# Every chat plays the same turn: started all at once, the streams'
	# frames of one offset fall due together, the turn's end four frames
	# in 60 ms for every stream, which even the bare relay cannot write
	# within 5 ms on two vCPUs. The largest count started evenly (250 a
	# second: all live together for the turn's last 10 s) is the row the
	# lateness target judges (bench/README.md, the live lane).
	if [[ "$LIVE_START_RATE" != 0 ]] && ((${#LIVE_STREAMS[@]} > 0)); then
		live_pair "${LIVE_STREAMS[-1]}" "$LIVE_START_RATE"
	fi
	if ((LIVE_SAVE_STREAMS > 0)); then
		live_mock "$WORK/live-saved" "$LIVE_SAVE_STREAMS"
		"${LOADGEN[@]}" live --url "$MOCK_URL" --upstream "$up_url" --pid "$MOCK_PID" --debug-url "$DEBUG_URL" --streams "$LIVE_SAVE_STREAMS" \
			--cassette "$LIVE_CASSETTE" --target dify-mock --saving "on (every turn saved)" --out "$RESULTS_JSON"
		stop_mock
		saved="$(find "$WORK/live-saved" -name '*.yaml' ! -name app.yaml | wc -l)"
		section_notes+=(--note "Live lane: the saving row's dify-mock wrote $saved of $LIVE_SAVE_STREAMS cassettes")
	fi
	stop_peers
fi

if grep -q -i -e 'panic' -e 'level=ERROR' "$WORK/mock.log" 2>/dev/null; then
	grep -i -m 20 -e 'panic' -e 'level=ERROR' "$WORK/mock.log" >&2
	die "dify-mock logged errors or panics during the benchmark (above)"
fi

loadavg_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
notes=(
	--note "Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- mockserver dify provider bench 2>/dev/null || echo ' (with uncommitted changes)')"
	--note "Date: $(date -u +%Y-%m-%dT%H:%MZ)"
	--note "Load average (1/5/15 min): $loadavg_start at the start, $loadavg_end at the end (other work on the machine skews the numbers)"
	--note "Process priority: $priority"
	--note "Bench wall time: $(elapsed "$start")"
	"${peer_notes[@]}"
	"${section_notes[@]}"
)
out_args=()
[[ -n "$RESULTS" ]] && out_args=(--out "$RESULTS")
"${LOADGEN[@]}" report --in "$RESULTS_JSON" "${out_args[@]}" "${notes[@]}" "${profile_args[@]}"
# An if, not &&: as the last command, a false test would be the script's
# exit status with BENCH_RESULTS="".
if [[ -n "$RESULTS" ]]; then
	ok "wrote $RESULTS in $(elapsed "$start")"
fi
