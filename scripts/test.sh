#!/usr/bin/env bash
# test.sh — every check `make test` promises, in one place.
#
# Usage: scripts/test.sh [STAGE...]
#   With no arguments every stage runs, in this order:
#     fmt          gofmt -l finds nothing
#     vet          go vet ./...
#     tidy         go mod tidy -diff finds nothing to change in go.mod/go.sum
#     lint         staticcheck ./... (staticcheck.conf; scripts/ensure-staticcheck.sh)
#     unit         go test -race ./..., which runs every Fuzz target's seed corpus too
#                  (checked: each target must report a result)
#     browser      the web console in headless Chromium (scripts/ensure-chromium.sh finds or installs it)
#     terraform    find Terraform >= 1.5 or build v1.5.7 (scripts/ensure-terraform.sh)
#     acceptance   TF_ACC=1 go test ./provider/... -run '^TestAcc', on that Terraform,
#                  again on Terraform >= 1.14 (scripts/ensure-terraform-1.14.sh),
#                  where the identity, list-resource and action tests do not skip,
#                  and on OpenTofu 1.10.6 (scripts/ensure-tofu.sh)
#     docs         go generate ./... leaves docs/ unchanged
#     docs-validate  tfplugindocs validate
#     examples     terraform validate in every examples/ folder
#     goreleaser   goreleaser check (.goreleaser.yml)
#     npm          the npm packages install offline from tarballs and work (scripts/npm-test.sh)
#     container    the image `make image` builds, run in Podman as the examples and docs run it
#                  (scripts/container-test.sh; Podman installed from the distribution if missing)
#     reliability  scripts/reliability.sh, when present
#   Every stage runs even after a failure (so one run shows every problem),
#   unless FAIL_FAST=1. The exit status is non-zero if any stage failed.
#
# Environment:
#   TEST_SKIP="goreleaser npm"   stages to skip
#   FAIL_FAST=1                  stop at the first failing stage
#   VERBOSE=1                    show every line of `go test -v` output
#   UNIT_TIMEOUT (20m), ACC_TIMEOUT (30m)
#   PREFETCH=0                   do not prepare Terraform/OpenTofu/GoReleaser/the image in the
#                                background while the first stages run
#   TF_ACC_TERRAFORM_PATH, TF_FORCE_BUILD  see scripts/ensure-terraform.sh
#   TF_ACC_TERRAFORM_1_14_PATH  see scripts/ensure-terraform-1.14.sh
#
# Exported to every stage (and so to the tests):
#   CHECKPOINT_DISABLE=1, TF_IN_AUTOMATION=1,
#   TF_CLI_CONFIG_FILE=<empty file in a temp dir> (the user's ~/.terraformrc is never read),
#   TF_ACC_TERRAFORM_PATH=<absolute path> once the terraform stage has run;
#   the acceptance stage adds TF_ACC=1.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

# Timed fuzzing is `make fuzz` (scripts/fuzz.sh), not a stage: the unit
# stage runs every seed corpus, and minutes of fuzzing per target belong to
# a run that asks for them.
ALL_STAGES=(fmt vet tidy lint unit browser terraform acceptance docs docs-validate examples goreleaser npm container reliability)

UNIT_TIMEOUT="${UNIT_TIMEOUT:-20m}"
ACC_TIMEOUT="${ACC_TIMEOUT:-30m}"

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/tf-dify-test.XXXXXX")"
PREFETCH_PID="" # the background job that prepares tools (prefetch)
cleanup() {
	[[ -z "$PREFETCH_PID" ]] || kill -TERM -- "-$PREFETCH_PID" 2>/dev/null || true
	rm -rf "$WORK_DIR"
}
trap cleanup EXIT

# A real, empty CLI config: Terraform then ignores ~/.terraformrc and any
# TF_CLI_CONFIG_FILE that points at a missing file (which only warns).
: >"$WORK_DIR/terraformrc"
export TF_CLI_CONFIG_FILE="$WORK_DIR/terraformrc"
export TF_IN_AUTOMATION=1
export CHECKPOINT_DISABLE=1
# The tests decide for themselves; a stray TF_ACC from the shell must not.
unset TF_ACC

# Counts of individual tests (top-level tests, subtests, examples, fuzz seeds)
# across every `go test` this script runs; see count_go_tests.
TESTS_LOG="$WORK_DIR/go-test-results.txt"
: >"$TESTS_LOG"

# ---------------------------------------------------------------------------
# helpers

# go_test ARGS...: runs `go test -v ARGS`, records its result lines for the
# final tally and, unless VERBOSE=1, hides the noisy "=== RUN" and
# "--- PASS" lines (failures, skips, logs of failing tests and package
# summaries are always shown). Returns go test's exit status.
go_test() {
	local rc=0
	if [[ "${VERBOSE:-0}" == 1 ]]; then
		go test -v "$@" 2>&1 | tee -a "$WORK_DIR/go-test.log" || rc=$?
	else
		go test -v "$@" 2>&1 | tee -a "$WORK_DIR/go-test.log" |
			awk '!/^=== (RUN|PAUSE|CONT|NAME)/ && !/^[[:space:]]*--- PASS:/ && !/^PASS$/ { print; fflush() }' || rc=$?
	fi
	grep -E '^[[:space:]]*--- (PASS|FAIL|SKIP):' "$WORK_DIR/go-test.log" >>"$TESTS_LOG" || true
	: >"$WORK_DIR/go-test.log"
	return "$rc"
}

# go_test_detail_on_failure ARGS...: go_test -v ARGS with the whole log kept
# aside: printed in full when the run fails (or VERBOSE=1), otherwise only
# the per-package result lines and skips. Returns go test's exit status.
go_test_detail_on_failure() {
	local out="$WORK_DIR/go-test-detail.log" rc=0
	VERBOSE=1 go_test "$@" >"$out" 2>&1 || rc=$?
	if ((rc != 0)) || [[ "${VERBOSE:-0}" == 1 ]]; then
		cat "$out" >&2
	else
		grep -E '^(ok|FAIL|\?)[[:space:]]|^[[:space:]]*--- SKIP:' "$out" >&2 || true
	fi
	return "$rc"
}

count_go_tests() {
	local kind="$1"
	grep -c -E "^[[:space:]]*--- $kind:" "$TESTS_LOG" || true
}

# require_terraform: fails the stage unless the terraform stage found one.
require_terraform() {
	[[ -n "${TF_ACC_TERRAFORM_PATH:-}" && -x "${TF_ACC_TERRAFORM_PATH}" ]] ||
		die "no Terraform CLI: the terraform stage did not run or failed"
}

# skip MESSAGE: ends the current stage as skipped.
skip() {
	printf '%s\n' "$*" >"$WORK_DIR/skip-reason"
	exit 99
}

# Tools that take minutes to build the first time (Terraform 1.5.7 and
# 1.14, OpenTofu, GoReleaser, staticcheck, the image) are prepared in the
# background while the earlier stages run; their stages then find them in
# the cache. One job builds them one after another, in the order the stages
# need them: started side by side, the builds shared the CPU and all
# finished late, the first one needed included, and OpenTofu (needed last in
# the acceptance stage) held up its start. The ensure-*.sh scripts build
# under a lock, so a stage that needs a tool before the job got to it waits
# for that build or builds it itself. PREFETCH=0 turns this off.
declare -a PREFETCH_ARGS=() # NAME CMD pairs, CMD quoted with %q
declare -A PREFETCH_QUEUED=()

# prefetch NAME CMD...: queues CMD, which prepares NAME's tool.
prefetch() {
	local name="$1"
	shift
	[[ "${PREFETCH:-1}" == 1 ]] || return 0
	command -v setsid >/dev/null 2>&1 || return 0
	[[ -z "${PREFETCH_QUEUED[$name]:-}" ]] || return 0 # docs and acceptance both want 1.14
	PREFETCH_ARGS+=("$name" "$(printf '%q ' "$@")")
	PREFETCH_QUEUED[$name]=1
}

# The background job: runs each queued command with its output in
# prefetch-NAME.out/.log and its exit status in prefetch-NAME.rc. It runs
# in a session of its own (setsid), so cleanup can stop the whole process
# group and Ctrl-C in the terminal does not reach it. With the kernel's
# autogroup scheduling a session is also a scheduling group with its own
# share of the CPU, and nice only ranks processes within a group: the
# builds share the CPU with the tests rather than wait for them. Lowering
# the group's own nice value (/proc/self/autogroup) was tried: on a shared
# machine it starved the builds behind every other session (a `terraform
# version` took 1.5 minutes at load 30) and the stages waiting for them.
# shellcheck disable=SC2016 # expanded by the job's own bash
readonly PREFETCH_JOB='
dir=$1
shift
while (($# >= 2)); do
	name=$1
	eval "cmd=($2)"
	shift 2
	rc=0
	nice -n 19 "${cmd[@]}" >"$dir/prefetch-$name.out" 2>"$dir/prefetch-$name.log" </dev/null || rc=$?
	echo "$rc" >"$dir/prefetch-$name.rc.new" && mv -f "$dir/prefetch-$name.rc.new" "$dir/prefetch-$name.rc"
done
'

start_prefetch() {
	((${#PREFETCH_ARGS[@]} > 0)) || return 0
	setsid bash -c "$PREFETCH_JOB" prefetch "$WORK_DIR" "${PREFETCH_ARGS[@]}" </dev/null &
	PREFETCH_PID=$!
}

# await_prefetch NAME: waits until the background job has prepared NAME's
# tool and shows what the build said. Works in a stage's subshell too (it
# polls the job's status file, as a subshell cannot wait for the job). If
# the build failed, the stage's own run of the script retries it in the
# foreground and shows the error.
await_prefetch() {
	local name="$1" rc
	[[ -n "${PREFETCH_QUEUED[$name]:-}" ]] || return 0
	[[ ! -f "$WORK_DIR/prefetch-$name.shown" ]] || return 0
	if [[ ! -f "$WORK_DIR/prefetch-$name.rc" ]] && kill -0 "$PREFETCH_PID" 2>/dev/null; then
		log "waiting for $name, being prepared in the background..."
		while [[ ! -f "$WORK_DIR/prefetch-$name.rc" ]] && kill -0 "$PREFETCH_PID" 2>/dev/null; do
			sleep 1
		done
	fi
	: >"$WORK_DIR/prefetch-$name.shown"
	rc="$(cat "$WORK_DIR/prefetch-$name.rc" 2>/dev/null || echo "no status")"
	# The stage's own run prints the "using ..." line; show what the build said.
	grep -v -e '^go: downloading' -e '^==> using ' "$WORK_DIR/prefetch-$name.log" >&2 2>/dev/null || true
	if [[ "$rc" == 0 ]]; then
		: >"$WORK_DIR/prefetch-$name.ok"
	else
		warn "background preparation of $name ended with $rc; retrying in the foreground"
	fi
}

# ---------------------------------------------------------------------------
# stages (one function each; a stage fails when any command in it fails)

stage_fmt() {
	local files
	files="$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' \
		-not -path './bin/*' -not -path './dist/*' -print0 | xargs -0 -r gofmt -l)"
	if [[ -n "$files" ]]; then
		printf 'gofmt would change these files (run `gofmt -w` on them):\n%s\n' "$files" >&2
		return 1
	fi
}

stage_vet() {
	go vet ./...
}

# go.mod and go.sum say exactly what the code imports: a direct dependency
# marked "// indirect", a missing or a stale go.sum line fails here.
stage_tidy() {
	if ! go mod tidy -diff; then
		printf 'go.mod/go.sum are not tidy: run `go mod tidy` and commit the result\n' >&2
		return 1
	fi
}

# staticcheck with the checks staticcheck.conf picks. The binary is built
# once into the tool cache (scripts/ensure-staticcheck.sh), like Terraform.
stage_lint() {
	local out sc
	out="$("$REPO_ROOT/scripts/ensure-staticcheck.sh")"
	sc="$(tail -n1 <<<"$out")"
	[[ "$sc" == /* && -x "$sc" ]] || die "ensure-staticcheck.sh returned '$sc', not an absolute path"
	"$sc" ./...
}

stage_unit() {
	# The scale-out test (mockserver/internal/scaleout) needs HAProxy; without one
	# it skips and says why.
	local out
	if out="$("$REPO_ROOT/scripts/ensure-haproxy.sh")"; then
		HAPROXY="$(tail -n1 <<<"$out")"
		export HAPROXY
	else
		warn "no HAProxy: the scale-out test (mockserver/internal/scaleout) is skipped"
	fi
	# Acceptance tests run in their own stage with TF_ACC=1.
	local from rc=0
	from=$(($(wc -l <"$TESTS_LOG") + 1))
	go_test -race -timeout "$UNIT_TIMEOUT" -skip '^TestAcc' ./... || rc=$?
	fuzz_seeds_ran "$from" || rc=1
	return "$rc"
}

# fuzz_seeds_ran FROM: every Fuzz target in the module reported a result
# (its seed corpus ran) in the test results from line FROM of $TESTS_LOG. A
# target that a build tag, a -run/-skip pattern or a package left out of
# ./... hides would otherwise go unnoticed now that timed fuzzing is only
# `make fuzz`.
fuzz_seeds_ran() {
	local from="$1" name declared ran missing=()
	declare -A declared_count=()
	while IFS= read -r name; do
		declared_count[$name]=$((${declared_count[$name]:-0} + 1))
	done < <(grep -rhoE --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*\(' . |
		sed 's/^func \(Fuzz[A-Za-z0-9_]*\)(/\1/')
	for name in "${!declared_count[@]}"; do
		declared="${declared_count[$name]}"
		ran="$(tail -n +"$from" "$TESTS_LOG" | grep -c -E "^--- (PASS|FAIL|SKIP): $name " || true)"
		((ran >= declared)) || missing+=("$name ($ran of $declared)")
	done
	if ((${#missing[@]} > 0)); then
		printf 'Fuzz targets whose seed corpus did not run in the unit stage:\n' >&2
		printf '  %s\n' "${missing[@]}" >&2
		return 1
	fi
	log "the seed corpora of all ${#declared_count[@]} Fuzz target names ran (timed fuzzing: make fuzz)"
}

# --- hook: the dify-mock web console in a real headless Chromium, driven
# from Go with chromedp (mockserver/internal/console/browser_test.go).
stage_browser() {
	local out chrome
	out="$("$REPO_ROOT/scripts/ensure-chromium.sh")" || die "no Chromium for the browser tests (see scripts/ensure-chromium.sh)"
	chrome="$(tail -n1 <<<"$out")"
	CHROME_PATH="$chrome" DIFY_MOCK_BROWSER_TEST=1 go_test -timeout 10m -run '^TestBrowser' ./mockserver/internal/console/...
}

stage_terraform() {
	local out tf
	out="$("$REPO_ROOT/scripts/ensure-terraform.sh")"
	tf="$(tail -n1 <<<"$out")"
	[[ "$tf" == /* && -x "$tf" ]] || die "ensure-terraform.sh returned '$tf', not an absolute path"
	printf '%s\n' "$tf" >"$WORK_DIR/terraform-path"
	"$tf" version >&2
}

stage_acceptance() {
	require_terraform
	log "TF_ACC=1 TF_ACC_TERRAFORM_PATH=$TF_ACC_TERRAFORM_PATH TF_CLI_CONFIG_FILE=$TF_CLI_CONFIG_FILE"
	local before after
	before="$(wc -l <"$TESTS_LOG")"
	# The whole -v log (every Terraform step) is shown when a test fails:
	# it is the first thing to read then. A green run prints a summary.
	local rc=0
	TF_ACC=1 go_test_detail_on_failure ./provider/... -run '^TestAcc' -timeout "$ACC_TIMEOUT" || rc=$?
	after="$(wc -l <"$TESTS_LOG")"
	# A run that reports no test at all is broken (build, -run pattern), not
	# green.
	((after > before)) || die "the acceptance run reported no TestAcc* test"
	# Resource identity (1.12), list resources and actions (1.14) skip on an
	# older CLI; the suite runs again on one where nothing skips.
	local tf14
	await_prefetch acceptance-1.14
	tf14="$(terraform_1_14)" || die "no Terraform >= 1.14 for the identity, list-resource and action tests"
	if [[ "$(realpath "$tf14")" != "$(realpath "$TF_ACC_TERRAFORM_PATH")" ]]; then
		log "again on $(tf_cli_banner "$tf14"): TF_ACC_TERRAFORM_PATH=$tf14"
		TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tf14" go_test_detail_on_failure ./provider/... -run '^TestAcc' -timeout "$ACC_TIMEOUT" || rc=$?
	fi
	# And on OpenTofu, so supporting it is a fact, not a claim. The test
	# framework hands the provider under test to the CLI as
	# HOST/NAMESPACE/dify (registry.terraform.io/hashicorp by default);
	# OpenTofu reads a configuration's bare "dify" as
	# registry.opentofu.org/hashicorp/dify, so it is named that way here (a
	# test whose first step is an import fails to init otherwise).
	local out tofu
	await_prefetch acceptance-tofu
	out="$("$REPO_ROOT/scripts/ensure-tofu.sh")" || die "no OpenTofu (scripts/ensure-tofu.sh)"
	tofu="$(tail -n1 <<<"$out")"
	[[ "$tofu" == /* && -x "$tofu" ]] || die "ensure-tofu.sh returned '$tofu', not an absolute path"
	log "again on $(tf_cli_banner "$tofu"): TF_ACC_TERRAFORM_PATH=$tofu TF_ACC_PROVIDER_HOST=registry.opentofu.org TF_ACC_PROVIDER_NAMESPACE=hashicorp"
	TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu" TF_ACC_PROVIDER_HOST=registry.opentofu.org TF_ACC_PROVIDER_NAMESPACE=hashicorp \
		go_test_detail_on_failure ./provider/... -run '^TestAcc' -timeout "$ACC_TIMEOUT" || rc=$?
	return "$rc"
}

# terraform_1_14: prints the path of a Terraform >= 1.14, found or built
# (and cached) by scripts/ensure-terraform-1.14.sh.
terraform_1_14() {
	local out tf
	out="$("$REPO_ROOT/scripts/ensure-terraform-1.14.sh")" || return 1
	tf="$(tail -n1 <<<"$out")"
	[[ "$tf" == /* && -x "$tf" ]] || return 1
	printf '%s\n' "$tf"
}

# --- hook: docs are generated by `go generate ./...` (tfplugindocs) and
# committed. This stage regenerates them and fails when docs/ changes.
stage_docs() {
	require_terraform
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "not a git work tree; cannot diff docs/"
	local before after changed
	before="$(worktree_state)"
	# tfplugindocs runs offline when a Terraform is first on PATH. It must
	# be one that knows write-only attributes (>= 1.11; dify_file.content_wo),
	# or the generated page differs by the Terraform at hand: the >= 1.14
	# build the acceptance stage uses.
	local tf_docs
	tf_docs="$(terraform_1_14)" || die "no Terraform >= 1.14 to generate the docs with"
	PATH="$(dirname "$tf_docs"):$PATH" go generate ./...
	after="$(worktree_state)"
	changed="$(git status --porcelain -uall -- docs/)"
	if [[ -n "$changed" ]]; then
		printf 'docs/ is stale; run `make docs` and commit the result:\n%s\n' "$changed" >&2
		git --no-pager diff --no-color -- docs/ | head -n 80 >&2 || true
		return 1
	fi
	# Other generated files (e.g. built-in cassettes) are their owners' call;
	# say so loudly without failing the docs check.
	if [[ "$before" != "$after" ]]; then
		warn "go generate also changed files outside docs/:"
		diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed -n 's/^[<>] [^ ]*  //p' | sort -u | sed 's/^/  /' >&2 || true
	fi
}

# worktree_state: one line per modified or untracked file with its hash, so
# two calls show what a command changed even in a dirty work tree.
worktree_state() {
	git status --porcelain -uall | cut -c4- | sort |
		while IFS= read -r f; do
			if [[ -f "$f" ]]; then sha256sum "$f"; else printf 'deleted  %s\n' "$f"; fi
		done
}

# --- hook: `tfplugindocs validate` checks the docs/ layout and front matter.
stage_docs-validate() {
	require_terraform
	# --provider-name: the default comes from the folder name, which a clone
	# may not share. [DEBUG] lines only with VERBOSE=1.
	local filter='^[0-9/]+ [0-9:]+ \[DEBUG\]'
	[[ "${VERBOSE:-0}" != 1 ]] || filter='^$^'
	local tf_docs
	tf_docs="$(terraform_1_14)" || die "no Terraform >= 1.14 to validate the docs with"
	PATH="$(dirname "$tf_docs"):$PATH" go tool tfplugindocs validate --provider-name dify 2>&1 |
		{ grep -v -E "$filter" || true; }
}

# --- hook: every examples/ folder with .tf files passes `terraform validate`
# against the provider built from this tree (through dev_overrides, so no
# registry is contacted and `terraform init` is not needed).
stage_examples() {
	require_terraform
	local dirs
	dirs="$(find examples -name '*.tf' -exec dirname {} \; | sort -u)"
	[[ -n "$dirs" ]] || die "no examples/**/*.tf found"
	local plugin_dir="$WORK_DIR/plugins"
	mkdir -p "$plugin_dir"
	go build -o "$plugin_dir/terraform-provider-dify" .
	cat >"$WORK_DIR/examples.tfrc" <<-EOF
		provider_installation {
		  dev_overrides {
		    "registry.terraform.io/difyops/dify" = "$plugin_dir"
		  }
		  direct {}
		}
	EOF
	local dir failed=0 tf tf14=""
	while IFS= read -r dir; do
		# Validate a copy so no .terraform/ or lock file lands in the tree.
		local copy="$WORK_DIR/examples/$dir"
		mkdir -p "$copy"
		cp "$dir"/*.tf "$copy"/
		# Examples of identities, list resources and actions declare the
		# Terraform they need (required_version = ">= 1.11" or newer: write-only
		# attributes, identities, list resources, actions).
		tf="$TF_ACC_TERRAFORM_PATH"
		if grep -Eqs 'required_version[[:space:]]*=[[:space:]]*">=[[:space:]]*1\.1[1-9]' "$dir"/*.tf; then
			[[ -n "$tf14" ]] || tf14="$(terraform_1_14)" || die "no Terraform >= 1.14 to validate $dir"
			tf="$tf14"
		fi
		if TF_CLI_CONFIG_FILE="$WORK_DIR/examples.tfrc" "$tf" -chdir="$copy" validate -no-color >"$copy.log" 2>&1; then
			printf '  ok    %s\n' "$dir" >&2
		else
			printf '  FAIL  %s\n' "$dir" >&2
			sed 's/^/        /' "$copy.log" >&2
			failed=1
		fi
	done <<<"$dirs"
	return "$failed"
}

# --- goreleaser check: .goreleaser.yml is valid for GoReleaser v2.
stage_goreleaser() {
	local out rc=0 gr
	out="$("$REPO_ROOT/scripts/ensure-goreleaser.sh")" || rc=$?
	if ((rc != 0)); then
		warn "##################################################################"
		warn "GoReleaser could not be installed (exit $rc); .goreleaser.yml was NOT checked."
		warn "##################################################################"
		skip "GoReleaser unavailable"
	fi
	gr="$(tail -n1 <<<"$out")"
	"$gr" check
}

# --- the npm packages (distribution/npm/): packed, installed offline from the tarballs,
# `npx dify-mock --version` and the JS API's node:test file. Skipped with a
# warning where Node.js/npm are missing.
stage_npm() {
	local rc=0
	scripts/npm-test.sh || rc=$?
	((rc != 3)) || skip "Node.js/npm not installed"
	return "$rc"
}

# --- the container image run as the examples run it, in Podman (installed
# from the distribution where missing). The image was built in the
# background (container-test.sh --prepare) when that succeeded. Skipped
# with a warning where no container runtime can be installed.
stage_container() {
	local rc=0 args=()
	if [[ -f "$WORK_DIR/prefetch-container.ok" ]]; then
		args=(--image "$(ls -t dist/dify-mock-image_*.tar | first_line)")
	fi
	scripts/container-test.sh "${args[@]}" || rc=$?
	((rc != 3)) || skip "no container runtime here (scripts/ensure-podman.sh needs apt-get as root)"
	return "$rc"
}

# --- hook: the reliability suite (long-running stream/timing/fault tests).
stage_reliability() {
	scripts/reliability.sh
}

# ---------------------------------------------------------------------------
# runner

declare -a RESULTS=()
any_failed=0

run_stage() {
	local name="$1" idx="$2" total="$3" start=$SECONDS rc=0
	printf '\n%s==> [%d/%d] %s%s  (%s)\n' "$_c_bold" "$idx" "$total" "$name" "$_c_reset" "$(date +%H:%M:%S)" >&2
	rm -f "$WORK_DIR/skip-reason"
	# The stage's tool from the background job. The acceptance stage waits
	# for Terraform 1.14 and OpenTofu itself, after the run on the first
	# Terraform: they are still being built then on a fresh machine.
	await_prefetch "$name"
	case "$name" in docs | docs-validate) await_prefetch acceptance-1.14 ;; esac # their Terraform (stage_docs)
	# A subshell outside any `if`, so `set -e` really applies inside the stage.
	set +e
	(
		set -euo pipefail
		"stage_$name"
	)
	rc=$?
	set -e
	local took
	took="$(elapsed "$start")"
	if ((rc == 0)); then
		ok "$name passed in $took"
		RESULTS+=("$(printf '%-14s passed   %s' "$name" "$took")")
	elif ((rc == 99)); then
		warn "$name skipped: $(cat "$WORK_DIR/skip-reason" 2>/dev/null)"
		RESULTS+=("$(printf '%-14s SKIPPED  %s  (%s)' "$name" "$took" "$(cat "$WORK_DIR/skip-reason" 2>/dev/null)")")
	else
		printf '%sFAILED:%s %s (exit %d) after %s\n' "$_c_red$_c_bold" "$_c_reset" "$name" "$rc" "$took" >&2
		RESULTS+=("$(printf '%-14s FAILED   %s  (exit %d)' "$name" "$took" "$rc")")
		any_failed=1
	fi
	# The terraform stage ran in a subshell; pick its result up here.
	if [[ "$name" == terraform && $rc == 0 ]]; then
		TF_ACC_TERRAFORM_PATH="$(cat "$WORK_DIR/terraform-path")"
		export TF_ACC_TERRAFORM_PATH
	fi
}

main() {
	local -a stages=()
	if (($# > 0)); then
		local s known
		for s in "$@"; do
			known=0
			for k in "${ALL_STAGES[@]}"; do [[ "$s" == "$k" ]] && known=1; done
			((known)) || die "unknown stage '$s'; stages: ${ALL_STAGES[*]}"
			stages+=("$s")
		done
	else
		stages=("${ALL_STAGES[@]}")
	fi
	# Stages that need Terraform get it even when only they were asked for.
	local needs_tf=0 has_tf=0 s
	for s in "${stages[@]}"; do
		case "$s" in acceptance | docs | docs-validate | examples) needs_tf=1 ;; terraform) has_tf=1 ;; esac
	done
	if ((needs_tf && !has_tf)); then stages=(terraform "${stages[@]}"); fi

	local total_start=$SECONDS i=0
	log "go $(go env GOVERSION), repo $REPO_ROOT, tool cache $CACHE_DIR"
	for s in "${stages[@]}"; do
		[[ " ${TEST_SKIP:-} " == *" $s "* ]] && continue
		case "$s" in
		terraform) prefetch terraform "$REPO_ROOT/scripts/ensure-terraform.sh" ;;
		docs | docs-validate) prefetch acceptance-1.14 "$REPO_ROOT/scripts/ensure-terraform-1.14.sh" ;;
		acceptance)
			prefetch acceptance-1.14 "$REPO_ROOT/scripts/ensure-terraform-1.14.sh"
			prefetch acceptance-tofu "$REPO_ROOT/scripts/ensure-tofu.sh"
			;;
		goreleaser) prefetch goreleaser "$REPO_ROOT/scripts/ensure-goreleaser.sh" ;;
		lint) prefetch lint "$REPO_ROOT/scripts/ensure-staticcheck.sh" ;;
		container) prefetch container "$REPO_ROOT/scripts/container-test.sh" --prepare ;;
		esac
	done
	start_prefetch
	for s in "${stages[@]}"; do
		i=$((i + 1))
		if [[ " ${TEST_SKIP:-} " == *" $s "* ]]; then
			warn "[$i/${#stages[@]}] $s skipped: listed in TEST_SKIP"
			RESULTS+=("$(printf '%-14s SKIPPED  (TEST_SKIP)' "$s")")
			continue
		fi
		run_stage "$s" "$i" "${#stages[@]}"
		if ((any_failed)) && [[ "${FAIL_FAST:-0}" == 1 ]]; then
			warn "FAIL_FAST=1: stopping after the first failure"
			break
		fi
	done

	printf '\n%s==> summary (%s)%s\n' "$_c_bold" "$(elapsed "$total_start")" "$_c_reset"
	printf '  %s\n' "${RESULTS[@]}"
	local passed failed skipped
	passed="$(count_go_tests PASS)"
	failed="$(count_go_tests FAIL)"
	skipped="$(count_go_tests SKIP)"
	if ((any_failed)); then
		printf '%sFAILED%s: see the stages marked FAILED above\n' "$_c_red$_c_bold" "$_c_reset"
	else
		printf '%sall stages passed%s\n' "$_c_green$_c_bold" "$_c_reset"
	fi
	# Last line, in the usual "N passed, N failed" shape: Go tests (subtests,
	# examples and fuzz seeds included) from the unit and acceptance stages.
	printf 'tests: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
	((any_failed == 0)) || exit 1
}

main "$@"
