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

# elapsed SECONDS_START: human-readable time since SECONDS_START (bash $SECONDS).
elapsed() {
	local s=$((SECONDS - $1))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}
