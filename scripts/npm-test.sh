#!/usr/bin/env bash
# npm-test.sh — the npm packages work offline (the `npm` stage of make test).
#
# Builds the packages for this machine with distribution/npm/build.js (go build, the
# release's flags), packs them with `npm pack`, installs the tarballs into a
# temporary project with the registry pointed at a closed port and --offline
# (so nothing can come from the network) and with install scripts disabled
# (the packages need none), then runs `npx dify-mock --version` and
# distribution/npm/test/*.test.mjs with node:test inside that project: the JS API starts
# the installed binary and a chat turn streams through it.
#
# Exit status 3: Node.js or npm is missing (the caller may skip).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

for tool in node npm npx; do
	command -v "$tool" >/dev/null 2>&1 || {
		warn "$tool not found; the npm packages were not tested"
		exit 3
	}
done

VERSION=0.0.0-test
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tf-dify-npm.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log "node $(node --version), npm $(npm --version): building the packages for this machine"
node distribution/npm/build.js --version "$VERSION" --out "$WORK/packages" --go-build --pack --commit npmtest >/dev/null
ls "$WORK/packages/tarballs" >&2

# No registry: a closed loopback port, --offline and an empty cache.
export npm_config_registry=http://127.0.0.1:9/
export npm_config_cache="$WORK/npm-cache"
export npm_config_offline=true
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export npm_config_ignore_scripts=true

project="$WORK/project"
mkdir -p "$project"
cat >"$project/package.json" <<-JSON
	{ "name": "dify-mock-npm-test", "version": "1.0.0", "private": true, "type": "module" }
JSON
(cd "$project" && npm install --no-save "$WORK"/packages/tarballs/*.tgz >&2)

# The packages have no install-time scripts at all.
node -e '
	const fs = require("fs"), path = require("path");
	const root = path.join(process.argv[1], "node_modules", "@difyops");
	for (const name of fs.readdirSync(root)) {
		const pkg = JSON.parse(fs.readFileSync(path.join(root, name, "package.json"), "utf8"));
		for (const hook of ["preinstall", "install", "postinstall"]) {
			if (pkg.scripts && pkg.scripts[hook]) { console.error(`@difyops/${name} has a ${hook} script`); process.exit(1); }
		}
	}' "$project"

got="$(cd "$project" && npx --no-install dify-mock --version)"
[[ "$got" == "dify-mock $VERSION (commit npmtest, "* ]] || die "npx dify-mock --version printed '$got'"
ok "npx dify-mock --version: $got"

cp distribution/npm/test/*.test.mjs "$project/"
(cd "$project" && node --test ./*.test.mjs)
