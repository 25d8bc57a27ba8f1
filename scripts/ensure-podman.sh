#!/usr/bin/env bash
# ensure-podman.sh — find or install Podman and print its absolute path as the
# last line of stdout. The container stage (scripts/container-test.sh) runs
# the image and its examples in it.
#
# Installs Debian's packages when Podman is missing and this is a Debian or
# Ubuntu machine where apt-get may run (root): podman, runc (the runtime the
# test configuration names; crun fails on some VMs' cgroups), and skopeo and
# umoci, which the docs use to read the image's OCI archive. Nothing is
# downloaded otherwise.
#
# Environment:
#   PODMAN_PATH   use this binary instead (checked, not installed)
#
# Exit status 3: no Podman and none can be installed here (the caller may skip).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(podman runc skopeo umoci)

have_all() {
	command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 &&
		command -v skopeo >/dev/null 2>&1 && command -v umoci >/dev/null 2>&1
}

install_packages() {
	have_all && return 0
	local start=$SECONDS
	log "installing ${PACKAGES[*]} from the distribution (apt-get, first time only)"
	apt_install "${PACKAGES[@]}" || return 1
	log "installed in $(elapsed "$start")"
}

main() {
	if [[ -n "${PODMAN_PATH:-}" ]]; then
		"$PODMAN_PATH" --version >/dev/null 2>&1 || die "PODMAN_PATH=$PODMAN_PATH does not run"
		abs_path "$PODMAN_PATH"
		return 0
	fi
	if ! have_all; then
		if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
			warn "Podman (with runc, skopeo, umoci) is not installed and cannot be installed here (needs apt-get as root)"
			exit 3
		fi
		install_packages || {
			warn "apt-get could not install ${PACKAGES[*]} (see above)"
			exit 3
		}
	fi
	log "using $(podman --version) ($(command -v podman))"
	command -v podman
}

main
