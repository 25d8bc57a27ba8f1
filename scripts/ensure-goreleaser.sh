#!/usr/bin/env bash
# ensure-goreleaser.sh — find or install GoReleaser v2 and print its absolute
# path as the last line of stdout.
#
# GoReleaser is a large module, so it is kept out of go.mod: it is built once
# with `go install` into the cache ($CACHE_DIR/goreleaser-<version>/goreleaser)
# and reused. A `goreleaser` on PATH is used when it is the same major version
# (v2) and GORELEASER_FORCE_BUILD is not 1.
#
# Environment:
#   GORELEASER_VERSION        version to install (default 2.15.1)
#   GORELEASER_FORCE_BUILD=1  ignore a goreleaser on PATH
#   TF_DIFY_CACHE_DIR         cache folder (see scripts/lib.sh)
#
# Exit status 3 means "could not install" (callers may choose to skip).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${GORELEASER_VERSION:-2.15.1}"
VERSION="${VERSION#v}"
DEST_DIR="$CACHE_DIR/goreleaser-$VERSION"
DEST="$DEST_DIR/goreleaser"

# goreleaser_version BIN: "2.15.1" or nothing.
goreleaser_version() {
	"$1" --version 2>/dev/null | sed -n 's/^GitVersion:[[:space:]]*v\{0,1\}\([0-9][^[:space:]]*\).*/\1/p' | first_line
}

install_goreleaser() {
	if [[ -x "$DEST" && -n "$(goreleaser_version "$DEST")" ]]; then
		return 0 # installed by a concurrent run while we waited for the lock
	fi
	local tmp start=$SECONDS
	mkdir -p "$CACHE_DIR"
	tmp="$(mktemp -d "$CACHE_DIR/.goreleaser-build.XXXXXX")"
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	log "installing GoReleaser v$VERSION with go install into $DEST_DIR (first time only; a few minutes)"
	if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod \
		go install -trimpath -ldflags='-s -w' "github.com/goreleaser/goreleaser/v2@v$VERSION" >&2); then
		warn "go install github.com/goreleaser/goreleaser/v2@v$VERSION failed (see above)"
		return 3
	fi
	[[ -n "$(goreleaser_version "$tmp/bin/goreleaser")" ]] || {
		warn "the freshly built goreleaser does not run"
		return 3
	}
	mkdir -p "$DEST_DIR"
	mv -f "$tmp/bin/goreleaser" "$DEST.new"
	mv -f "$DEST.new" "$DEST"
	log "installed GoReleaser v$VERSION in $(elapsed "$start")"
}

main() {
	local on_path v
	if [[ "${GORELEASER_FORCE_BUILD:-0}" != 1 ]] && on_path="$(command -v goreleaser 2>/dev/null)"; then
		v="$(goreleaser_version "$on_path")"
		if [[ "$v" == 2.* ]]; then
			log "using GoReleaser $v from PATH: $on_path"
			abs_path "$on_path"
			return 0
		fi
		warn "goreleaser on PATH ($on_path) reports version '${v:-unknown}'; need v2; installing v$VERSION"
	fi
	if [[ ! -x "$DEST" || -z "$(goreleaser_version "$DEST")" ]]; then
		local rc=0
		with_lock "goreleaser-$VERSION" install_goreleaser || rc=$?
		((rc == 0)) || exit 3
	fi
	log "using GoReleaser $(goreleaser_version "$DEST") from cache: $DEST"
	printf '%s\n' "$DEST"
}

main
