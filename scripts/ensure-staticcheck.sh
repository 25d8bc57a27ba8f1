#!/usr/bin/env bash
# ensure-staticcheck.sh — find or install staticcheck and print its absolute
# path as the last line of stdout.
#
# staticcheck is kept out of go.mod (it would pin golang.org/x/tools for the
# whole module): it is built once with `go install` into the cache
# ($CACHE_DIR/staticcheck-<version>-<go version>/staticcheck) and reused.
# The Go version is part of the path because staticcheck must be built by
# a Go at least as new as the code it checks.
#
# Environment:
#   STATICCHECK_VERSION  module version of honnef.co/go/tools (default 0.8.2,
#                        staticcheck 2026.1.2, which knows Go 1.26)
#   TF_DIFY_CACHE_DIR    cache folder (see scripts/lib.sh)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${STATICCHECK_VERSION:-0.8.2}"
VERSION="${VERSION#v}"
GOVERSION="$(go env GOVERSION)"
DEST_DIR="$CACHE_DIR/staticcheck-$VERSION-$GOVERSION"
DEST="$DEST_DIR/staticcheck"

install_staticcheck() {
	if [[ -x "$DEST" ]] && "$DEST" -version >/dev/null 2>&1; then
		return 0 # installed by a concurrent run while we waited for the lock
	fi
	local tmp start=$SECONDS
	mkdir -p "$CACHE_DIR"
	tmp="$(mktemp -d "$CACHE_DIR/.staticcheck-build.XXXXXX")"
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	log "installing staticcheck (honnef.co/go/tools v$VERSION) with go install into $DEST_DIR (first time only)"
	if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod \
		go install -trimpath -ldflags='-s -w' "honnef.co/go/tools/cmd/staticcheck@v$VERSION" >&2); then
		die "go install honnef.co/go/tools/cmd/staticcheck@v$VERSION failed (see above)"
	fi
	"$tmp/bin/staticcheck" -version >/dev/null || die "the freshly built staticcheck does not run"
	mkdir -p "$DEST_DIR"
	mv -f "$tmp/bin/staticcheck" "$DEST.new"
	mv -f "$DEST.new" "$DEST"
	log "installed staticcheck v$VERSION in $(elapsed "$start")"
}

if [[ ! -x "$DEST" ]] || ! "$DEST" -version >/dev/null 2>&1; then
	with_lock "staticcheck-$VERSION" install_staticcheck
fi
log "using $("$DEST" -version) from cache: $DEST"
printf '%s\n' "$DEST"
