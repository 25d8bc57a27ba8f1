#!/usr/bin/env bash
# dist-packages.sh — dify-mock's container image and npm packages, made from
# the binaries of a GoReleaser run (its dist/artifacts.json and metadata.json),
# offline and without a container daemon.
#
# Usage: scripts/dist-packages.sh [DIST]     (default: dist)
#
# Writes:
#   DIST/image/                         OCI image layout, linux/amd64 and linux/arm64
#                                       (whichever the run built), distribution/image
#   DIST/dify-mock-image_<version>.tar  the same as one file (docker load, podman load,
#                                       skopeo copy oci-archive:…)
#   DIST/npm/                           @difyops/dify-mock and one package per platform
#                                       (distribution/npm/build.js), packed into DIST/npm/tarballs/
# Publishing them is a release step (CONTRIBUTING.md, "Releasing").
# `make release-check` runs this after its snapshot build.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

DIST="${1:-dist}"
[[ -f "$DIST/artifacts.json" && -f "$DIST/metadata.json" ]] ||
	die "$DIST/artifacts.json or metadata.json missing: run goreleaser (e.g. make release-check) first"
# metadata.json is compact or indented JSON; either way a field is "name": "value".
json_field() { sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" "$DIST/metadata.json" | first_line; }
VERSION="$(json_field version)"
COMMIT="$(json_field commit)"
[[ -n "$VERSION" ]] || die "no version in $DIST/metadata.json"
# File and image times from the commit, as GoReleaser's mod_timestamp.
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
export SOURCE_DATE_EPOCH

if grep -q -E '"goos"[[:space:]]*:[[:space:]]*"linux"' "$DIST/artifacts.json" &&
	grep -q -E '"ID"[[:space:]]*:[[:space:]]*"dify-mock"' "$DIST/artifacts.json"; then
	go run ./distribution/image --dist "$DIST" --version "$VERSION" --revision "$COMMIT" \
		--out "$DIST/image" --tar "$DIST/dify-mock-image_${VERSION}.tar" >&2
	ok "container image: $DIST/dify-mock-image_${VERSION}.tar"
else
	warn "no linux dify-mock binary in $DIST (a --single-target build on another OS?): no container image"
fi

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	node distribution/npm/build.js --dist "$DIST" --version "$VERSION" --commit "$COMMIT" --out "$DIST/npm" --pack >/dev/null
	ok "npm packages: $(cd "$DIST/npm/tarballs" && echo *.tgz)"
else
	warn "Node.js/npm not found: no npm packages"
fi
