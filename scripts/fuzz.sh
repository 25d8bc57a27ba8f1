#!/usr/bin/env bash
# fuzz.sh — runs every Go fuzz target in the module, one after another.
#
# Targets are discovered, not listed: packages whose _test.go files declare
# `func Fuzz...` are asked for their targets with `go test -list '^Fuzz'`,
# and each target runs with `go test -fuzz '^Name$' -fuzztime $FUZZTIME`.
#
# Environment:
#   FUZZTIME   per target (default 60s; any -fuzztime value, e.g. 10000x)
#   FUZZ_PKGS  package patterns to search (default ./...)
# New crashers are written by Go to <pkg>/testdata/fuzz/<Target>/ — commit
# them with the fix, they become regression seeds.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

FUZZTIME="${FUZZTIME:-60s}"
read -r -a patterns <<<"${FUZZ_PKGS:-./...}"

# Only compile the packages that can have fuzz targets.
mapfile -t dirs < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . 2>/dev/null |
	grep -v -e '^\./\.git/' -e '/testdata/' | xargs -r -n1 dirname | sort -u)
if ((${#dirs[@]} == 0)); then
	log "no fuzz targets in this module"
	exit 0
fi
pkgs_out="$(go list "${patterns[@]}")" || die "go list ${patterns[*]} failed"
candidates_out="$(go list "${dirs[@]}")" || die "go list failed for the packages with fuzz targets"
mapfile -t candidates < <(sort -u <<<"$candidates_out")
# The packages FUZZ_PKGS names, as a set: a lookup rather than
# `printf ... | grep -q`, whose early exit under pipefail could fail the
# printf with SIGPIPE and drop a package that did match.
declare -A wanted=()
while IFS= read -r pkg; do
	[[ -z "$pkg" ]] || wanted[$pkg]=1
done <<<"$pkgs_out"

declare -a targets=() # "pkg target"
for pkg in "${candidates[@]}"; do
	# Respect FUZZ_PKGS.
	[[ -n "${wanted[$pkg]:-}" ]] || continue
	# A package that does not compile is a failure, not "no targets".
	listing="$(go test -list '^Fuzz' "$pkg")" || die "go test -list failed for $pkg (see above)"
	while IFS= read -r name; do
		[[ "$name" =~ ^Fuzz ]] && targets+=("$pkg $name")
	done <<<"$listing"
done

if ((${#targets[@]} == 0)); then
	log "no fuzz targets in this module"
	exit 0
fi

# fuzz_one PKG NAME: one fuzz run. Go 1.26's fuzz coordinator can report a
# bare "context deadline exceeded" when -fuzztime ends while a starved worker
# is mid-call (golang/go#75804, fixed in Go 1.27): no input failed and none
# was written. Such a run is tried once more; a run that wrote a failing
# input, panicked or failed any other way fails at once, and a second bare
# deadline failure is reported as a warning, not as a found bug.
fuzz_one() {
	local pkg="$1" name="$2" out attempt rc
	out="$(mktemp)"
	for attempt in 1 2; do
		rc=0
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$out" || rc=$?
		((rc == 0)) && { rm -f "$out"; return 0; }
		if ! deadline_flake "$out"; then
			rm -f "$out"
			return "$rc"
		fi
		warn "$name: the fuzz coordinator's deadline race (golang/go#75804), no failing input; attempt $attempt of 2"
	done
	rm -f "$out"
	warn "$name: twice the coordinator's deadline race and no failing input: not counted as a failure"
	return 0
}

# deadline_flake LOG: the log's only failure is the coordinator's bare
# "context deadline exceeded" (no input written, no panic, no test error).
deadline_flake() {
	local log="$1"
	grep -q '^    context deadline exceeded$' "$log" || return 1
	! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:|fuzzing process hung|deadlock' "$log"
}

log "${#targets[@]} fuzz target(s), $FUZZTIME each"
failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	start=$SECONDS
	log "fuzzing $pkg $name for $FUZZTIME"
	if fuzz_one "$pkg" "$name"; then
		ok "$name ($(elapsed "$start"))"
	else
		warn "$name FAILED; the failing input is under $(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name/"
		failed+=("$pkg $name")
	fi
done

if ((${#failed[@]} > 0)); then
	printf 'fuzz targets that failed:\n' >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
ok "all ${#targets[@]} fuzz target(s) passed"
