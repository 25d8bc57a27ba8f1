#!/usr/bin/env bash
# ensure-terraform-1.14.sh — find or build a Terraform CLI >= 1.14 (list
# resources, `terraform query`, actions) for the acceptance tests, and print
# its absolute path as the last line of stdout.
#
# Order of preference:
#   1. $TF_ACC_TERRAFORM_1_14_PATH, if it points at a Terraform >= 1.14;
#   2. `terraform` on PATH, if it is >= 1.14;
#   3. Terraform v1.14.3 built from source into the cache
#      ($CACHE_DIR/terraform-1.14.3/terraform), reused on later runs.
#
# Why not `go install github.com/hashicorp/terraform@v1.14.3`: its go.mod has
# `replace` directives pointing at nested modules (the remote-state backends
# and internal/legacy) that the module zip does not contain, so the Go
# command refuses it. The build instead downloads the module through the Go
# module proxy, copies it to a writable folder, removes the remote-state
# backends that live in those nested modules (azurerm, consul, cos, gcs,
# kubernetes, oci, oss, pg, s3 — the tests only use the local backend) and
# their go.mod lines, and builds the result. About 6–10 minutes on 2 cores,
# first time only.
#
# Terraform >= 1.6 is BUSL-1.1 licensed: this binary is a test tool only and
# is never shipped or committed.
#
# Environment:
#   TF_ACC_TERRAFORM_1_14_PATH   use this binary (checked, not built)
#   TF_FORCE_BUILD=1             ignore PATH and use (or build) the cached one
#   TF_NEW_BUILD_VERSION         version built in step 3 (default 1.14.3)
#   TF_DIFY_CACHE_DIR            cache folder (see scripts/lib.sh)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly MIN_VERSION=1.14.0
VERSION="${TF_NEW_BUILD_VERSION:-1.14.3}"
VERSION="${VERSION#v}"
DEST_DIR="$CACHE_DIR/terraform-$VERSION"
DEST="$DEST_DIR/terraform"

for arg in "$@"; do
	case "$arg" in
	-h | --help)
		print_help
		exit 0
		;;
	*) die "unknown argument: $arg (try --help)" ;;
	esac
done

# usable BIN LABEL: true (and prints the absolute path) for a Terraform >= 1.14.
usable() {
	local bin="$1" label="$2" v
	[[ -f "$bin" && -x "$bin" ]] || return 1
	v="$(tf_cli_version "$bin")"
	[[ -n "$v" ]] || return 1
	if ! version_ge "$v" "$MIN_VERSION"; then
		log "$label ($bin) is Terraform $v; the list/query/action tests need >= $MIN_VERSION"
		return 1
	fi
	log "using Terraform $v from $label: $bin"
	abs_path "$bin"
}

# The remote-state backends that live in nested modules (see the header).
readonly NESTED_BACKENDS='azure|consul|cos|gcs|kubernetes|oci|oss|pg|s3'

build_terraform() {
	if [[ -x "$DEST" && -n "$(tf_cli_version "$DEST")" ]]; then
		return 0 # built by a concurrent run while we waited for the lock
	fi
	local start=$SECONDS tmp json moddir src
	mkdir -p "$CACHE_DIR"
	tmp="$(mktemp -d "$CACHE_DIR/.terraform-$VERSION-build.XXXXXX")"
	# shellcheck disable=SC2064
	trap "chmod -R u+w '$tmp' 2>/dev/null; rm -rf '$tmp'" RETURN
	log "building Terraform v$VERSION from source into $DEST_DIR"
	log "(first time only; about 6-10 minutes on 2 cores; needs the Go module proxy)"
	json="$(cd "$tmp" && go mod download -json "github.com/hashicorp/terraform@v$VERSION")" ||
		die "go mod download github.com/hashicorp/terraform@v$VERSION failed: $json"
	moddir="$(sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p' <<<"$json" | first_line)"
	[[ -n "$moddir" && -d "$moddir" ]] || die "could not find the downloaded module directory in: $json"
	src="$tmp/src"
	cp -R "$moddir" "$src" # the module cache is read-only
	chmod -R u+w "$src"

	local init="$src/internal/backend/init/init.go"
	# Imports of the nested backends, then their entries in the backends map
	# ("azurerm" is the map key of the azure package).
	sed -E -i \
		-e "\#\"github.com/hashicorp/terraform/internal/backend/remote-state/($NESTED_BACKENDS)\"#d" \
		-e "/func\(\) backend\.Backend \{ return backend(Azure|Consul|Cos|GCS|Kubernetes|OCI|OSS|Pg|S3)\.New\(\) \}/d" \
		"$init"
	if grep -Eq "remote-state/($NESTED_BACKENDS)\"|backend(Azure|Consul|Cos|GCS|Kubernetes|OCI|OSS|Pg|S3)\." "$init"; then
		die "could not remove the nested remote-state backends from $init (layout changed in v$VERSION?)"
	fi
	sed -E -i \
		-e "\#github.com/hashicorp/terraform/internal/backend/remote-state/($NESTED_BACKENDS)[[:space:]]#d" \
		-e "\#github.com/hashicorp/terraform/internal/legacy[[:space:]]#d" \
		"$src/go.mod"

	# A test tool needs no debug information (-s -w: a cheaper link).
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
		-ldflags '-s -w -X github.com/hashicorp/terraform/version.dev=no' -o "$tmp/terraform" . >&2) ||
		die "go build of Terraform v$VERSION failed (see above)"
	[[ -n "$(tf_cli_version "$tmp/terraform")" ]] || die "the freshly built terraform does not run"
	mkdir -p "$DEST_DIR"
	mv -f "$tmp/terraform" "$DEST.new"
	mv -f "$DEST.new" "$DEST" # atomic: readers never see a half-written binary
	log "built Terraform v$VERSION in $(elapsed "$start")"
}

main() {
	if [[ -n "${TF_ACC_TERRAFORM_1_14_PATH:-}" ]]; then
		usable "$TF_ACC_TERRAFORM_1_14_PATH" TF_ACC_TERRAFORM_1_14_PATH && return 0
		die "TF_ACC_TERRAFORM_1_14_PATH=$TF_ACC_TERRAFORM_1_14_PATH is not a Terraform >= $MIN_VERSION"
	fi
	local on_path
	if [[ "${TF_FORCE_BUILD:-0}" != 1 ]] && on_path="$(command -v terraform 2>/dev/null)" &&
		usable "$on_path" PATH; then
		return 0
	fi
	if [[ ! -x "$DEST" || -z "$(tf_cli_version "$DEST")" ]]; then
		with_lock "terraform-$VERSION" build_terraform
	fi
	usable "$DEST" cache || die "cached Terraform at $DEST is not usable"
}

main
