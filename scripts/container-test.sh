#!/usr/bin/env bash
# container-test.sh — dify-mock's container image run as its examples run it
# (the `container` stage of make test; `make container-test`).
#
# Finds or installs Podman (scripts/ensure-podman.sh), builds the image with
# `make image` (or takes --image FILE), loads it into a private Podman store
# and runs distribution/image's container tests: the compose service and the
# GitHub Actions service of examples/dify-mock/ and every `docker run`,
# `skopeo` and `umoci` line of docs/mock/running.md, each until it is healthy
# and answers. Nothing outside a temporary folder is configured: the store,
# the runtime settings and the containers go away at exit.
#
# Usage: scripts/container-test.sh [--image dist/dify-mock-image_V.tar] [--prepare]
#   --image FILE   use this archive instead of running `make image`
#   --prepare      only install Podman and build the image (make test runs
#                  this in the background while earlier stages run)
#
# The store is rootful Podman with settings that work on small VMs: runc,
# cgroupfs, the vfs storage driver, file-based events and lowered container
# ulimits.
#
# Exit status 3: no container runtime here and none can be installed (the
# caller may skip).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

IMAGE_TAR="" PREPARE=0
while (($#)); do
	case "$1" in
	--image) IMAGE_TAR="${2:?--image needs a file}"; shift 2 ;;
	--prepare) PREPARE=1; shift ;;
	*) die "unknown argument '$1'" ;;
	esac
done

rc=0
out="$(scripts/ensure-podman.sh)" || rc=$?
((rc != 3)) || exit 3
((rc == 0)) || die "ensure-podman.sh failed (exit $rc)"
PODMAN="$(tail -n1 <<<"$out")"

if [[ -z "$IMAGE_TAR" ]]; then
	log "make image"
	make --no-print-directory image >&2
	IMAGE_TAR="$(ls -t dist/dify-mock-image_*.tar | first_line)"
fi
[[ -f "$IMAGE_TAR" ]] || die "no image archive: $IMAGE_TAR"
IMAGE_TAR="$(abs_path "$IMAGE_TAR")"
((PREPARE == 0)) || { ok "Podman and $IMAGE_TAR are ready"; exit 0; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tf-dify-podman.XXXXXX")"
cleanup() {
	"$PODMAN" rm -af -t 0 >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# Podman's default ulimits (nproc and nofile of a million or more) are more
# than some VMs let even root set in a container; one mock needs far less.
nofile="$(ulimit -n)"
[[ "$nofile" =~ ^[0-9]+$ ]] && ((nofile <= 65536)) || nofile=65536
nproc=4096
cat >"$WORK/storage.conf" <<-EOF2
	[storage]
	driver = "vfs"
	runroot = "$WORK/run"
	graphroot = "$WORK/root"
EOF2
cat >"$WORK/containers.conf" <<-EOF2
	[containers]
	default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
	[engine]
	runtime = "runc"
	cgroup_manager = "cgroupfs"
	events_logger = "file"
	tmp_dir = "$WORK/tmp"
EOF2
export CONTAINERS_STORAGE_CONF="$WORK/storage.conf" CONTAINERS_CONF="$WORK/containers.conf"

if ! info="$("$PODMAN" info 2>&1)"; then
	warn "Podman is installed but cannot run containers here:"
	printf '%s\n' "$info" | tail -n 5 >&2
	exit 3
fi

loaded="$("$PODMAN" load -q -i "$IMAGE_TAR" 2>&1)" || die "podman load $IMAGE_TAR: $loaded"
IMAGE="$(sed -n 's/^Loaded image[^:]*: *//p' <<<"$loaded" | first_line)"
[[ -n "$IMAGE" ]] || die "podman load printed no image name: $loaded"
log "loaded $IMAGE from $IMAGE_TAR into a private store"

DIFY_MOCK_CONTAINER_CLI="$PODMAN" DIFY_MOCK_IMAGE="$IMAGE" DIFY_MOCK_IMAGE_TAR="$IMAGE_TAR" \
	go test -count=1 -v -timeout 10m -run '^(TestComposeService|TestActionsService|TestDocsContainerLines|TestDocsOCIArchiveLines)' ./distribution/image/
