#!/usr/bin/env bash
# ensure-haproxy.sh — find HAProxy (2.6 or newer) for the scale-out test
# (mockserver/internal/scaleout, docs/mock/scale-out.md) and print its absolute path
# as the last line of stdout.
#
# Order of preference:
#   1. $HAPROXY, if it is executable;
#   2. `haproxy` on PATH, or /usr/sbin/haproxy;
#   3. Debian/Ubuntu's `haproxy` package, installed with apt-get when this
#      script runs as root (CI containers, the project's Debian machines).
#
# Exits non-zero (and says why) when none can be found or installed; the
# test then skips with that reason.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

no_arguments "$@"

# works BIN: true when BIN runs and is 2.6 or newer (balance hash, json_query).
works() {
	local v
	v="$("$1" -v 2>/dev/null | sed -n 's/^HAProxy version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')" || return 1
	[[ -n "$v" ]] || return 1
	read -r major minor <<<"$v"
	((major > 2 || (major == 2 && minor >= 6)))
}

find_haproxy() {
	local p
	if [[ -n "${HAPROXY:-}" ]]; then
		[[ -x "$HAPROXY" ]] && works "$HAPROXY" && { printf '%s\n' "$HAPROXY"; return 0; }
		warn "HAPROXY=$HAPROXY is not a working HAProxy 2.6+; looking elsewhere"
	fi
	for p in "$(command -v haproxy 2>/dev/null || true)" /usr/sbin/haproxy; do
		if [[ -n "$p" && -x "$p" ]] && works "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

if bin="$(find_haproxy)"; then
	log "using $bin ($("$bin" -v 2>/dev/null | first_line))"
	printf '%s\n' "$bin"
	exit 0
fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	die "no HAProxy 2.6+ found. Install one (Debian/Ubuntu: sudo apt-get install -y haproxy) or set HAPROXY."
fi
log "no HAProxy found; installing Debian's haproxy package with apt-get"
apt_install haproxy || die "apt-get could not install haproxy"
bin="$(find_haproxy)" || die "haproxy was installed but is not a working 2.6+"
log "installed $bin"
printf '%s\n' "$bin"
