#!/usr/bin/env bash
# reliability.sh — the reliability suite at soak scale; the `reliability`
# stage of scripts/test.sh runs it.
#
# The same tests run in the unit stage under -race at a size that keeps
# them fast. Here the disconnect storm runs without the race detector at
# ten times the clients, the stream-lifecycle tests run again (with the
# stack-size and detached-stream checks that -race cannot run), and the
# cross-user concurrency test repeats under -race to shake out rare
# interleavings.
#
# Environment:
#   STORM_CLIENTS (10000), STORM_CONCURRENCY (2000)  storm size
#   STORM_SEED                                       repeat a storm's random choices
#   RELIABILITY_RACE_COUNT (3)                       -count of the -race repeat
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

export STORM_CLIENTS="${STORM_CLIENTS:-10000}"
export STORM_CONCURRENCY="${STORM_CONCURRENCY:-2000}"
race_count="${RELIABILITY_RACE_COUNT:-3}"

# Each in-flight storm client holds two sockets in the test process; on a
# loaded machine the server side of a dropped client may not be closed yet
# when the next client dials, so allow twice that (the test still checks that
# open files return to their baseline afterwards).
need=$((4 * STORM_CONCURRENCY + 1024))
hard="$(ulimit -Hn)"
if [[ "$hard" == unlimited ]] || ((hard >= need)); then
	ulimit -n "$need"
else
	ulimit -n "$hard"
	warn "open-file limit $hard is below the $need a storm of $STORM_CONCURRENCY concurrent clients needs; lowering STORM_CONCURRENCY"
	STORM_CONCURRENCY=$(((hard - 1024) / 4))
	export STORM_CONCURRENCY
fi

log "disconnect storm: $STORM_CLIENTS clients, $STORM_CONCURRENCY at a time; stream lifecycle tests"
go test -count=1 -timeout 10m -v \
	-run '^(TestDisconnectStorm|TestDisconnectInALongGapEndsTheReplayAtOnce|TestDisconnect|TestShutdownEndsStreams|TestStop|TestStreamKeepsASmallStack|TestDetachedStreamHoldsLessMemory|TestShutdownClosesADetachedStreamWhoseClientStoppedReading)$' \
	./mockserver/ 2>&1 | grep -v -E '^=== (RUN|PAUSE|CONT)'
log "cross-user concurrency under -race, $race_count times"
go test -race -count="$race_count" -timeout 10m -run '^(TestConcurrentUsersStayIsolated|TestConcurrentUse)$' ./mockserver/
ok "reliability suite passed"
