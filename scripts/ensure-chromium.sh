#!/usr/bin/env bash
# ensure-chromium.sh — find a Chromium (or Chrome) for the console's browser
# tests, and print its absolute path as the last line of stdout.
#
# Order of preference:
#   1. $CHROME_PATH, if it is executable;
#   2. `chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable`
#      on PATH;
#   3. Debian/Ubuntu's `chromium` package, installed with apt-get when this
#      script runs as root (CI containers, the project's Debian machines).
#
# Exits non-zero (and says why) when none can be found or installed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

no_arguments "$@"

# works BIN: true when BIN runs and reports a version.
works() {
	"$1" --version >/dev/null 2>&1
}

find_browser() {
	local name p
	if [[ -n "${CHROME_PATH:-}" ]]; then
		[[ -x "$CHROME_PATH" ]] && works "$CHROME_PATH" && { printf '%s\n' "$CHROME_PATH"; return 0; }
		warn "CHROME_PATH=$CHROME_PATH is not a working browser; looking elsewhere"
	fi
	for name in chromium chromium-browser google-chrome google-chrome-stable; do
		if p="$(command -v "$name" 2>/dev/null)" && works "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

if browser="$(find_browser)"; then
	log "using $browser ($("$browser" --version 2>/dev/null | first_line))"
	printf '%s\n' "$browser"
	exit 0
fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	die "no Chromium found (chromium, chromium-browser, google-chrome). Install one (Debian/Ubuntu: sudo apt-get install -y chromium) or set CHROME_PATH."
fi
log "no Chromium found; installing Debian's chromium package with apt-get"
apt_install chromium || die "apt-get could not install chromium"
browser="$(find_browser)" || die "chromium was installed but does not run"
log "using $browser ($("$browser" --version 2>/dev/null | first_line))"
printf '%s\n' "$browser"
