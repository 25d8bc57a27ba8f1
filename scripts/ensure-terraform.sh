#!/usr/bin/env bash
# ensure-terraform.sh — find or build a Terraform CLI >= 1.5 for the acceptance
# tests, and print its absolute path as the last line of stdout.
#
# Order of preference:
#   1. $TF_ACC_TERRAFORM_PATH, if it points at a Terraform >= 1.5;
#   2. `terraform` on PATH, if it is >= 1.5;
#   3. Terraform v1.5.7 built from source with `go install` into the cache
#      ($CACHE_DIR/terraform-1.5.7/terraform), reused on later runs.
#
# Options / environment:
#   --build, TF_FORCE_BUILD=1   skip 1 and 2 and use (or build) the cached 1.5.7
#   TF_BUILD_VERSION            version built in step 3 (default 1.5.7)
#   TF_DIFY_CACHE_DIR           cache folder (default
#                               ${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-dify)
#
# The build needs only Go and the Go module proxy; it takes about 5 minutes on
# a 2-core machine the first time. Progress goes to stderr.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly MIN_VERSION=1.5.0
BUILD_VERSION="${TF_BUILD_VERSION:-1.5.7}"
BUILD_VERSION="${BUILD_VERSION#v}"
force_build="${TF_FORCE_BUILD:-0}"

for arg in "$@"; do
	case "$arg" in
	--build) force_build=1 ;;
	-h | --help)
		print_help
		exit 0
		;;
	*) die "unknown argument: $arg (try --help)" ;;
	esac
done

# usable BIN LABEL: true (and prints the absolute path) when BIN is Terraform >= 1.5.
usable() {
	local bin="$1" label="$2" v
	[[ -f "$bin" && -x "$bin" ]] || {
		warn "$label ($bin) is not an executable file; ignoring it"
		return 1
	}
	v="$(tf_cli_version "$bin")"
	if [[ -z "$v" ]]; then
		warn "$label ($bin) did not report a Terraform version; ignoring it"
		return 1
	fi
	if ! version_ge "$v" "$MIN_VERSION"; then
		warn "$label ($bin) is Terraform $v; need >= $MIN_VERSION; ignoring it"
		return 1
	fi
	log "using Terraform $v from $label: $bin"
	abs_path "$bin"
}

build_terraform() {
	local dest_dir="$CACHE_DIR/terraform-$BUILD_VERSION"
	local dest="$dest_dir/terraform"
	if [[ -x "$dest" && -n "$(tf_cli_version "$dest")" ]]; then
		return 0 # built by a concurrent run while we waited for the lock
	fi
	local tmp start=$SECONDS
	mkdir -p "$CACHE_DIR"
	tmp="$(mktemp -d "$CACHE_DIR/.terraform-build.XXXXXX")"
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	log "building Terraform v$BUILD_VERSION from source into $dest_dir"
	log "(first time only; about 5 minutes on 2 cores; needs the Go module proxy)"
	# Run outside the repository so its go.mod plays no part; CGO off like
	# HashiCorp's release builds, so no C toolchain is needed. A test tool
	# needs no debug information (-s -w: a cheaper link, a third smaller).
	if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-mod=mod \
		go install -trimpath -ldflags='-s -w' "github.com/hashicorp/terraform@v$BUILD_VERSION" >&2); then
		die "go install github.com/hashicorp/terraform@v$BUILD_VERSION failed (see above). Is the Go module proxy reachable? Or set TF_ACC_TERRAFORM_PATH to a Terraform >= $MIN_VERSION."
	fi
	[[ -n "$(tf_cli_version "$tmp/bin/terraform")" ]] ||
		die "the freshly built $tmp/bin/terraform does not run"
	mkdir -p "$dest_dir"
	mv -f "$tmp/bin/terraform" "$dest.new"
	mv -f "$dest.new" "$dest" # atomic: readers never see a half-written binary
	log "built Terraform v$BUILD_VERSION in $(elapsed "$start")"
}

main() {
	if [[ "$force_build" != 1 ]]; then
		if [[ -n "${TF_ACC_TERRAFORM_PATH:-}" ]] && usable "$TF_ACC_TERRAFORM_PATH" TF_ACC_TERRAFORM_PATH; then
			return 0
		fi
		local on_path
		if on_path="$(command -v terraform 2>/dev/null)" && usable "$on_path" PATH; then
			return 0
		fi
	else
		log "forced build: ignoring TF_ACC_TERRAFORM_PATH and PATH"
	fi

	local cached="$CACHE_DIR/terraform-$BUILD_VERSION/terraform"
	if [[ ! -x "$cached" || -z "$(tf_cli_version "$cached")" ]]; then
		with_lock "terraform-$BUILD_VERSION" build_terraform
	fi
	usable "$cached" cache || die "cached Terraform at $cached is not usable"
}

main
