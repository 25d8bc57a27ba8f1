#!/usr/bin/env bash
# ensure-tofu.sh — find or build the OpenTofu CLI and print its absolute path
# as the last line of stdout.
#
# `go install github.com/opentofu/opentofu/cmd/tofu@vX` is refused (the module
# has replace directives), so the module source is fetched through the Go
# module proxy with `go mod download`, copied into the cache, and built there
# with `go build ./cmd/tofu` (about 8 minutes on 2 cores, first time only).
#
# Environment:
#   TOFU_VERSION          default 1.10.6
#   TOFU_PATH             use this binary instead (checked, not built)
#   TOFU_FORCE_BUILD=1    ignore a `tofu` on PATH
#   TF_DIFY_CACHE_DIR     cache folder (see scripts/lib.sh)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${TOFU_VERSION:-1.10.6}"
VERSION="${VERSION#v}"
DEST_DIR="$CACHE_DIR/tofu-$VERSION"
DEST="$DEST_DIR/tofu"

build_tofu() {
	if [[ -x "$DEST" && -n "$(tf_cli_version "$DEST")" ]]; then
		return 0
	fi
	local start=$SECONDS tmp json moddir
	mkdir -p "$CACHE_DIR"
	tmp="$(mktemp -d "$CACHE_DIR/.tofu-build.XXXXXX")"
	# shellcheck disable=SC2064
	trap "chmod -R u+w '$tmp' 2>/dev/null; rm -rf '$tmp'" RETURN
	log "building OpenTofu v$VERSION from source into $DEST_DIR (first time only; about 8 minutes)"
	json="$(cd "$tmp" && go mod download -json "github.com/opentofu/opentofu@v$VERSION")" ||
		die "go mod download github.com/opentofu/opentofu@v$VERSION failed: $json"
	moddir="$(sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p' <<<"$json" | first_line)"
	[[ -n "$moddir" && -d "$moddir" ]] || die "could not find the downloaded module directory in: $json"
	# The module cache is read-only; build in a writable copy.
	cp -R "$moddir" "$tmp/src"
	chmod -R u+w "$tmp/src"
	# Only the CLI's package; a test tool needs no debug information (-s -w).
	(cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$tmp/tofu" ./cmd/tofu >&2) ||
		die "go build ./cmd/tofu failed (see above)"
	[[ -n "$(tf_cli_version "$tmp/tofu")" ]] || die "the freshly built tofu does not run"
	mkdir -p "$DEST_DIR"
	mv -f "$tmp/tofu" "$DEST.new"
	mv -f "$DEST.new" "$DEST"
	log "built OpenTofu v$VERSION in $(elapsed "$start")"
}

main() {
	local bin v
	if [[ -n "${TOFU_PATH:-}" ]]; then
		v="$(tf_cli_version "$TOFU_PATH")"
		[[ -n "$v" ]] || die "TOFU_PATH=$TOFU_PATH is not a working OpenTofu"
		log "using OpenTofu $v from TOFU_PATH"
		abs_path "$TOFU_PATH"
		return 0
	fi
	if [[ "${TOFU_FORCE_BUILD:-0}" != 1 ]] && bin="$(command -v tofu 2>/dev/null)"; then
		v="$(tf_cli_version "$bin")"
		if [[ -n "$v" ]]; then
			log "using OpenTofu $v from PATH: $bin"
			abs_path "$bin"
			return 0
		fi
	fi
	if [[ ! -x "$DEST" || -z "$(tf_cli_version "$DEST")" ]]; then
		with_lock "tofu-$VERSION" build_tofu
	fi
	log "using OpenTofu $(tf_cli_version "$DEST") from cache: $DEST"
	printf '%s\n' "$DEST"
}

main
