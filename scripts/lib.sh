# shellcheck shell=bash
# Shared helpers for the scripts in this folder. Source it; do not run it.
#
# Everything a script prints for humans goes to stderr, so stdout stays free
# for the one value a script returns (for example a binary's absolute path).

# Repository root, whatever the caller's working directory is.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT

# Cache for tools the scripts build (Terraform, OpenTofu, GoReleaser). It lives
# outside the repository so clean clones and `git clean` never rebuild them.
# Override with TF_DIFY_CACHE_DIR.
CACHE_DIR="${TF_DIFY_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/terraform-provider-dify}"
export CACHE_DIR

# Terraform and OpenTofu must never phone home from scripts or tests.
export CHECKPOINT_DISABLE=1

if [[ -t 2 && -z "${NO_COLOR:-}" ]]; then
	_c_bold=$'\033[1m' _c_red=$'\033[31m' _c_yellow=$'\033[33m' _c_green=$'\033[32m' _c_reset=$'\033[0m'
else
	_c_bold='' _c_red='' _c_yellow='' _c_green='' _c_reset=''
fi

log() { printf '%s==>%s %s\n' "$_c_bold" "$_c_reset" "$*" >&2; }
warn() { printf '%sWARNING:%s %s\n' "$_c_yellow$_c_bold" "$_c_reset" "$*" >&2; }
die() {
	printf '%sERROR:%s %s\n' "$_c_red$_c_bold" "$_c_reset" "$*" >&2
	exit 1
}
ok() { printf '%sOK:%s %s\n' "$_c_green$_c_bold" "$_c_reset" "$*" >&2; }

# print_help: the running script's header comment (from line 2 to its
# `set -euo` line), without the comment marks: what --help prints.
print_help() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[-1]}" | sed '$d; s/^# \{0,1\}//'
}

# no_arguments "$@": for a script that takes none: --help prints its header,
# anything else is refused.
no_arguments() {
	case "${1:-}" in
	-h | --help)
		print_help
		exit 0
		;;
	"") ;;
	*) die "unknown argument: $1 (try --help)" ;;
	esac
}

# version_ge A B: true when dotted version A >= B (numeric fields, suffixes like
# "-beta1" are ignored).
version_ge() {
	local a b i
	IFS=. read -r -a a <<<"${1%%[-+]*}"
	IFS=. read -r -a b <<<"${2%%[-+]*}"
	for i in 0 1 2; do
		local x="${a[i]:-0}" y="${b[i]:-0}"
		[[ "$x" =~ ^[0-9]+$ ]] || x=0
		[[ "$y" =~ ^[0-9]+$ ]] || y=0
		((10#$x > 10#$y)) && return 0
		((10#$x < 10#$y)) && return 1
	done
	return 0
}

# first_line: prints the first line of its input, and reads the rest. Every
# script runs under `set -o pipefail`, where `CMD | head -n1` fails at random:
# head exits after one line, and a CMD that is still writing (Terraform's
# `version` writes its banner in more than one write) dies of SIGPIPE, so the
# pipeline's status is 141. Use this instead of head, `grep -q`, `grep -m` or
# `sed q` at the end of a pipeline (scripts/pipefail_test.go checks).
first_line() {
	sed -n '1p'
}

# tf_cli_banner BIN: the first line of `BIN version` ("Terraform v1.14.3",
# "OpenTofu v1.10.6"), for log lines; fails when BIN does not run.
tf_cli_banner() {
	TF_CLI_CONFIG_FILE=/dev/null "$1" version 2>/dev/null | first_line
}

# tf_cli_version BIN: the version a Terraform or OpenTofu binary reports
# ("1.14.3"; OpenTofu keeps Terraform's JSON key), or nothing when BIN is
# not a working one. A missing CLI config file only warns; /dev/null keeps
# stderr clean.
tf_cli_version() {
	local out
	out="$(TF_CLI_CONFIG_FILE=/dev/null "$1" version -json 2>/dev/null)" || return 0
	sed -n 's/.*"terraform_version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$out" | first_line
}

# abs_path FILE: absolute path of an existing file.
abs_path() {
	local dir
	dir="$(cd "$(dirname "$1")" && pwd)" || return 1
	printf '%s/%s\n' "$dir" "$(basename "$1")"
}

# with_lock NAME CMD...: runs CMD while holding an exclusive lock in the cache,
# so two scripts building the same tool at once do not race. Without flock(1)
# it simply runs CMD; installs are atomic renames either way.
with_lock() {
	local name="$1"
	shift
	mkdir -p "$CACHE_DIR"
	if command -v flock >/dev/null 2>&1; then
		(
			flock 9
			"$@"
		) 9>"$CACHE_DIR/.$name.lock"
	else
		"$@"
	fi
}

# apt_install PKG...: installs Debian packages with apt-get (root only),
# refreshing the package lists once if the first try fails (a fresh machine
# may have none). Every script installs through here, under one lock and
# with dpkg's own lock wait, because make test prepares tools in the
# background: two apt-gets at once would otherwise fail on dpkg's lock.
apt_install() {
	[[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1 || return 1
	with_lock apt _apt_install "$@"
}

_apt_install() {
	local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends)
	export DEBIAN_FRONTEND=noninteractive
	"${apt[@]}" install "$@" >&2 && return 0
	apt-get -o DPkg::Lock::Timeout=600 -q update >&2 || return 1
	"${apt[@]}" install "$@" >&2
}

# elapsed SECONDS_START: human-readable time since SECONDS_START (bash $SECONDS).
elapsed() {
	local s=$((SECONDS - $1))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# The one way the scripts run a dify-mock of their own (demo.sh, bench.sh).
MOCK_PID=""
MOCK_URL=""
MOCK_READY_TIMEOUT="${MOCK_READY_TIMEOUT:-30}" # seconds for the banner's API base URL
MOCK_STOP_TIMEOUT="${MOCK_STOP_TIMEOUT:-10}"   # seconds for the mock to exit after SIGTERM

# SESSION runs a command in its own session (setsid), where setsid exists:
# out of reach of the terminal's Ctrl-C, and, with the kernel's autogroup
# scheduling, in a scheduling group of its own, as a separate service is.
SESSION=()
command -v setsid >/dev/null 2>&1 && SESSION=(setsid)

# start_mock BIN LOG [SERVE FLAGS...]: runs `BIN serve --addr 127.0.0.1:0
# FLAGS...` in the background, stdout and stderr appended to LOG, and waits
# for its banner. Port 0: the kernel picks a free port and the banner prints
# it, so no other process can take a probed port first. The mock runs in its
# own session (setsid), so a Ctrl-C in the terminal reaches the caller's
# foreground job (Terraform) but not the mock, and without the caller's
# DIFY_MOCK_* variables (an --api-key from them would reject the script's
# key). MOCK_PREFIX (an array, e.g. nice -n 5) runs in front of BIN. Sets
# MOCK_PID, MOCK_URL (the API base URL) and MOCK_LOG_FROM (the byte of LOG
# where this run's output starts); dies when the mock exits or prints no URL
# within MOCK_READY_TIMEOUT seconds.
start_mock() {
	local bin="$1" out="$2" i from
	shift 2
	# Only this run's banner counts: LOG may hold earlier runs'. The file
	# exists before the mock starts, so reading it never races its creation
	# (under pipefail a missing LOG ended the caller).
	: >>"$out"
	from=$(($(wc -c <"$out") + 1))
	# shellcheck disable=SC2046 # one "-u NAME" pair per variable
	env $(compgen -e | grep '^DIFY_MOCK_' | sed 's/^/-u /') ${SESSION[@]+"${SESSION[@]}"} \
		${MOCK_PREFIX[@]+"${MOCK_PREFIX[@]}"} "$bin" serve --addr 127.0.0.1:0 "$@" >>"$out" 2>&1 </dev/null &
	MOCK_PID=$!
	MOCK_URL=""
	for ((i = 0; i < MOCK_READY_TIMEOUT * 10; i++)); do
		kill -0 "$MOCK_PID" 2>/dev/null || die "dify-mock exited before it was ready; see $out"
		MOCK_URL="$(tail -c +"$from" "$out" 2>/dev/null | sed -n 's/^[[:space:]]*API base URL[[:space:]]*\(http[^[:space:]]*\).*/\1/p' | first_line)"
		[[ -n "$MOCK_URL" ]] && MOCK_LOG_FROM="$from" && return 0
		sleep 0.1
	done
	die "dify-mock printed no API base URL within ${MOCK_READY_TIMEOUT}s; see $out"
}

# stop_mock: SIGTERM to the mock start_mock started, then SIGKILL when it
# has not exited within MOCK_STOP_TIMEOUT seconds. Safe to call twice.
stop_mock() {
	[[ -n "$MOCK_PID" ]] || return 0
	if kill -0 "$MOCK_PID" 2>/dev/null; then
		kill -TERM "$MOCK_PID" 2>/dev/null || true
		local waited=0
		while kill -0 "$MOCK_PID" 2>/dev/null && ((waited < MOCK_STOP_TIMEOUT * 10)); do
			sleep 0.1
			waited=$((waited + 1))
		done
		if kill -0 "$MOCK_PID" 2>/dev/null; then
			warn "dify-mock (pid $MOCK_PID) did not stop within ${MOCK_STOP_TIMEOUT}s; killing it"
			kill -KILL "$MOCK_PID" 2>/dev/null || true
		fi
	fi
	wait "$MOCK_PID" 2>/dev/null || true
	MOCK_PID=""
}
