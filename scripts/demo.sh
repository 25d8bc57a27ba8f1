#!/usr/bin/env bash
# demo.sh — the one-command demo (`make demo`).
#
# Builds the provider and dify-mock, starts the mock with its built-in
# cassettes on a free 127.0.0.1 port, and runs examples/quickstart/ against it
# with the real Terraform CLI: apply (read the app, upload a file, start a
# conversation about it), show the answer and the agent's thoughts, rename the
# conversation in place, destroy. Then, with a Terraform >= 1.14, it applies
# examples/annotations/: annotations and the annotation reply switch, whose
# dify_chat smoke test is answered by an annotation, and the dify_chat action
# run on demand, streaming the agent's thoughts and tool calls. Then it stops
# the mock.
#
# Nothing is written to the repository or to ~/.terraformrc: the binaries, the
# copy of the quickstart, its state and a throwaway Terraform CLI config (with
# dev_overrides pointing at the fresh provider) live in one temp dir, removed
# at the end. The mock is stopped on success, failure and Ctrl-C alike. When a
# step fails, the temp dir is kept so its logs can be read.
#
# Environment:
#   DEMO_SPEED=F       replay speed of the mock (default 1 = Dify's recorded
#                      cadence, the turn takes ~11 s; 0 = no delays)
#   DEMO_KEEP=1        keep the temp dir (logs, state) even on success
#   TF_ACC_TERRAFORM_PATH, TF_FORCE_BUILD   choose the Terraform CLI, see
#                      scripts/ensure-terraform.sh (default: terraform on PATH
#                      if >= 1.5, else v1.5.7 built from source once, ~5 min)
#   DEMO_ACTIONS=auto  the annotations/action part needs Terraform >= 1.14:
#                      auto (default) runs it when one is on PATH, in
#                      TF_ACC_TERRAFORM_1_14_PATH or already built in the cache;
#                      1 builds it if needed (scripts/ensure-terraform-1.14.sh,
#                      ~10 min the first time); 0 skips it
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

DEMO_SPEED="${DEMO_SPEED:-1}"
readonly TOTAL_STEPS=8
readonly READY_TIMEOUT=30 # seconds for the mock to answer GET /v1/ (start and stop: lib.sh)

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/dify-demo.XXXXXX")"
MOCK_LOG="$WORK_DIR/dify-mock.log"
TICKER_PID=""
STEP="starting"
STEP_NO=0
STEP_START=$SECONDS
TOTAL_START=$SECONDS
SUCCEEDED=0
INTERRUPTED=0

# ---------------------------------------------------------------------------
# progress and cleanup

step() {
	STEP_NO=$((STEP_NO + 1))
	STEP="$1"
	STEP_START=$SECONDS
	printf '\n%s==> [%d/%d] %s%s\n' "$_c_bold" "$STEP_NO" "$TOTAL_STEPS" "$STEP" "$_c_reset" >&2
}

step_done() {
	ok "$STEP ($(elapsed "$STEP_START"))"
}

# ticker MESSAGE: prints "MESSAGE... (1m30s)" every 30 s until stop_ticker, so
# a long build shows it is alive. The command itself runs in the foreground,
# where Ctrl-C reaches it.
ticker() {
	local msg="$1" start=$SECONDS
	(
		trap - EXIT INT TERM
		n=0
		while sleep 1; do
			n=$((n + 1))
			((n % 30 == 0)) && log "$msg... ($(elapsed "$start"))"
		done
	) &
	TICKER_PID=$!
}

stop_ticker() {
	if [[ -n "$TICKER_PID" ]]; then
		kill "$TICKER_PID" 2>/dev/null || true
		wait "$TICKER_PID" 2>/dev/null || true
		TICKER_PID=""
	fi
}

# stop_providers: a Terraform that was interrupted or died may leave its
# provider plugin (the binary this script built, in $WORK_DIR) running for a
# moment. Wait for those processes, found by their exact executable path, and
# stop any that linger.
stop_providers() {
	local bin="$WORK_DIR/provider/terraform-provider-dify" p pids tries=0
	[[ -d /proc ]] || return 0
	while :; do
		pids=()
		for p in /proc/[0-9]*; do
			[[ "$(readlink "$p/exe" 2>/dev/null)" == "$bin" ]] && pids+=("${p#/proc/}")
		done
		((${#pids[@]} == 0)) && return 0
		((tries == 50)) && break
		tries=$((tries + 1))
		sleep 0.1
	done
	warn "stopping a provider process Terraform left behind (pid ${pids[*]})"
	kill -TERM "${pids[@]}" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	set +e
	stop_ticker
	local mock_died=0
	if [[ -n "$MOCK_PID" ]] && ! kill -0 "$MOCK_PID" 2>/dev/null; then
		mock_died=1
	fi
	stop_mock
	stop_providers
	if ((SUCCEEDED)) && [[ "${DEMO_KEEP:-0}" != 1 ]]; then
		rm -rf "$WORK_DIR"
		return
	fi
	if ((INTERRUPTED)); then
		warn "interrupted during step [$STEP_NO/$TOTAL_STEPS] $STEP; dify-mock is stopped"
	elif ((!SUCCEEDED)); then
		printf '\n%sERROR:%s step [%d/%d] "%s" failed (exit %d) after %s.\n' \
			"$_c_red$_c_bold" "$_c_reset" "$STEP_NO" "$TOTAL_STEPS" "$STEP" "$rc" "$(elapsed "$STEP_START")" >&2
		((mock_died)) && printf 'dify-mock had already exited (crashed or killed) when the step failed.\n' >&2
		if [[ -s "$MOCK_LOG" ]]; then
			printf 'Last lines of the dify-mock log (%s):\n' "$MOCK_LOG" >&2
			tail -n 15 "$MOCK_LOG" | sed 's/^/    /' >&2
		fi
	fi
	printf 'Kept %s for inspection (dify-mock.log, terraform-*.log, quickstart/ with its state).\n' "$WORK_DIR" >&2
	printf 'Nothing is left running. Remove it with: rm -rf %q\n' "$WORK_DIR" >&2
}
trap cleanup EXIT
trap 'INTERRUPTED=1; exit 130' INT
trap 'INTERRUPTED=1; exit 143' TERM

# ---------------------------------------------------------------------------
# helpers

# http_get URL [HEADER]: prints the body of a 200 response to GET URL; fails
# otherwise. curl when it is installed, else bash's /dev/tcp (plain HTTP to
# loopback is all the mock needs).
http_get() {
	local url="$1" header="${2:-}"
	if command -v curl >/dev/null 2>&1; then
		curl -fsS --max-time 2 ${header:+-H "$header"} "$url"
		return
	fi
	local rest="${url#http://}" hostport path host port line
	hostport="${rest%%/*}"
	path="/${rest#*/}"
	host="${hostport%:*}"
	port="${hostport##*:}"
	(
		exec 3<>"/dev/tcp/$host/$port" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n%sConnection: close\r\n\r\n' "$path" "$hostport" "${header:+$header$'\r\n'}" >&3
		IFS= read -r -t 2 line <&3 || exit 1
		[[ "$line" == "HTTP/1."?" 200"* ]] || exit 1
		while IFS= read -r -t 2 line <&3 && [[ "$line" != $'\r' ]]; do :; done
		cat <&3
	)
}

# tf ARGS...: the Terraform CLI on the quickstart copy, with the demo's CLI
# config and a dummy key for the mock. Variables a user may have set for their
# own Dify or Terraform runs are cleared so they cannot change the demo.
tf() {
	env -u TF_CLI_ARGS -u TF_CLI_ARGS_apply -u TF_CLI_ARGS_destroy -u TF_CLI_ARGS_output \
		-u TF_WORKSPACE -u TF_DATA_DIR \
		-u DIFY_RETRY_MAX_ATTEMPTS -u DIFY_RETRY_MAX_DELAY -u DIFY_REQUEST_TIMEOUT \
		TF_CLI_CONFIG_FILE="$WORK_DIR/terraformrc" \
		TF_INPUT=0 \
		DIFY_BASE_URL="$BASE_URL" \
		DIFY_API_KEY="app-demo-not-a-secret" \
		DIFY_USER="demo" \
		"$TERRAFORM" -chdir="${TF_DIR:-$WORK_DIR/quickstart}" "$@"
}

# (TF_DIR=DIR TERRAFORM=BIN before tf or tf_run runs another copy with
# another CLI: the annotations part needs Terraform >= 1.14.)

# tf_run LOG ARGS...: runs `tf ARGS -no-color`, keeps the full output in
# $WORK_DIR/LOG and shows the lines that tell the story: resource progress,
# the plan summary, a rename, warnings in one line each and every error box.
# DEMO_VERBOSE=1 shows everything.
tf_run() {
	local log="$WORK_DIR/$1"
	shift
	# On Ctrl-C only Terraform should react (it stops the provider, which
	# cleans up the half-made conversation); the readers of its output ignore
	# the signal so Terraform can still report what it did.
	if [[ "${DEMO_VERBOSE:-0}" == 1 ]]; then
		tf "$@" -no-color 2>&1 | (trap '' INT && exec tee "$log") >&2
		return
	fi
	tf "$@" -no-color 2>&1 | (trap '' INT && exec tee "$log") | (trap '' INT && tf_filter) >&2
}

# tf_filter: the line filter of tf_run. A read loop rather than awk, because
# mawk (Debian's awk) reads its input in blocks and would hold the progress
# lines back until Terraform exits.
tf_filter() {
	local line w in_error=0
	local progress='^(data\.)?[a-z0-9_]+\.[A-Za-z0-9_-]+(\[[^]]*\])?: '
	local summary='^(Plan: |No changes\.|Apply complete!|Destroy complete!|Action )'
	local rename='^ +~ name +='
	while IFS= read -r line; do
		# Errors come last and matter whole: show everything from the first.
		[[ "$line" == "Error:"* ]] && in_error=1
		if ((in_error)); then
			printf '    %s\n' "$line"
		elif [[ "$line" =~ $progress || "$line" =~ $summary ]]; then
			printf '    %s\n' "$line"
		elif [[ "$line" =~ $rename ]]; then
			printf '    %s\n' "${line#"${line%%[! ]*}"}"
		elif [[ "$line" == "- "* ]]; then
			w="${line#- }"
			case "$w" in
			*"development overrides"*) w+=" (expected: the demo uses the provider it just built)" ;;
			*"file left in place"*) w+=" (expected: Dify has no API to delete an upload)" ;;
			esac
			printf '    warning: %s\n' "$w"
		elif [[ "$line" == "╷"* || "$line" == "│"* || "$line" == "╵"* || "$line" == "Warning:"* ]]; then
			printf '    %s\n' "$line"
		fi
	done
}

# ---------------------------------------------------------------------------
# the demo

command -v go >/dev/null 2>&1 || die "Go is not on PATH; install Go >= 1.26 (https://go.dev/dl/) and run make demo again"

printf '%sterraform-provider-dify demo%s: the quickstart against dify-mock, offline.\n' "$_c_bold" "$_c_reset" >&2
printf 'Working in %s (removed at the end); your ~/.terraformrc is not used.\n' "$WORK_DIR" >&2

step "build the provider and dify-mock"
log "go build . and ./mockserver/cmd/dify-mock (the first build compiles the dependencies: 1-3 minutes)"
mkdir -p "$WORK_DIR/provider" "$WORK_DIR/bin"
ticker "still compiling"
go build -trimpath -o "$WORK_DIR/provider/terraform-provider-dify" .
go build -trimpath -o "$WORK_DIR/bin/dify-mock" ./mockserver/cmd/dify-mock
stop_ticker
step_done

step "find a Terraform CLI >= 1.5"
log "terraform on PATH if >= 1.5; otherwise v1.5.7 is built from source once (about 5 minutes on"
log "2 cores, needs the Go module proxy) and cached in $CACHE_DIR"
ticker "still looking for / building Terraform"
TERRAFORM="$("$REPO_ROOT/scripts/ensure-terraform.sh" | tail -n1)"
stop_ticker
[[ "$TERRAFORM" == /* && -x "$TERRAFORM" ]] || die "scripts/ensure-terraform.sh returned '$TERRAFORM', not an executable path"
TF_VERSION="$(tf_cli_banner "$TERRAFORM")"
step_done

step "start dify-mock on a free loopback port"
# start_mock (lib.sh) runs it in its own session, so a Ctrl-C in the terminal
# reaches Terraform but not the mock: Terraform can then stop its run
# cleanly against a live mock, and the EXIT trap stops the mock afterwards.
: >"$MOCK_LOG"
start_mock "$WORK_DIR/bin/dify-mock" "$MOCK_LOG" --speed "$DEMO_SPEED" --log-level info
BASE_URL="$MOCK_URL"
deadline=$((SECONDS + READY_TIMEOUT))
until http_get "$BASE_URL/" >"$WORK_DIR/server-info.json" 2>/dev/null; do
	kill -0 "$MOCK_PID" 2>/dev/null || die "dify-mock exited before it was ready; see $MOCK_LOG"
	((SECONDS < deadline)) || die "dify-mock did not answer GET $BASE_URL/ within ${READY_TIMEOUT}s; see $MOCK_LOG"
	sleep 0.2
done
sed -n '1,/cassettes/p' "$MOCK_LOG" | sed 's/^/    /' >&2
log "ready: GET $BASE_URL/ -> $(cat "$WORK_DIR/server-info.json")"
step_done

step "terraform apply examples/quickstart (read the app, upload a file, start a conversation)"
mkdir -p "$WORK_DIR/quickstart"
cp examples/quickstart/*.tf "$WORK_DIR/quickstart/"
cat >"$WORK_DIR/terraformrc" <<EOF
# Written by scripts/demo.sh: use the provider just built, no registry.
# (The second address is the one OpenTofu gives "difyops/dify".)
provider_installation {
  dev_overrides {
    "registry.terraform.io/difyops/dify" = "$WORK_DIR/provider"
    "registry.opentofu.org/difyops/dify" = "$WORK_DIR/provider"
  }
  direct {}
}
EOF
log "$TF_VERSION, TF_CLI_CONFIG_FILE=$WORK_DIR/terraformrc"
log "DIFY_BASE_URL=$BASE_URL DIFY_USER=demo DIFY_API_KEY=<dummy app- key>"
log "no terraform init: dev_overrides serve the provider (Terraform warns that they are in effect)"
if [[ "$DEMO_SPEED" == 1 ]]; then
	log "the mock replays the reply at Dify's recorded pace: the conversation takes ~11 s"
fi
tf_run terraform-apply.log apply -auto-approve -compact-warnings
step_done

step "outputs"
ANSWER="$(tf output -raw answer)"
[[ -n "$ANSWER" ]] || die "the conversation's answer is empty"
CONVERSATION_ID="$(tf output -raw conversation_id)"
{
	printf '\n%sapp:%s %s\n' "$_c_bold" "$_c_reset" "$(tf output -raw app)"
	printf '%sconversation:%s %s (%s tokens)\n' "$_c_bold" "$_c_reset" "$CONVERSATION_ID" "$(tf output -raw total_tokens)"
	printf '\n%sagent_thoughts%s (reasoning and tool calls; empty rounds left out):\n' "$_c_bold" "$_c_reset"
	tf output -no-color agent_thoughts | sed 's/^/  /'
	printf '\n%sanswer:%s\n' "$_c_bold" "$_c_reset"
	printf '%s\n' "$ANSWER" | sed 's/^/  │ /'
} >&2
step_done

step "rename the conversation in place (no new conversation)"
tf_run terraform-rename.log apply -auto-approve -compact-warnings -var 'conversation_name=Lisbon trip (renamed)'
grep -q '0 added, 1 changed, 0 destroyed' "$WORK_DIR/terraform-rename.log" ||
	die "expected the rename to change 1 resource in place; see $WORK_DIR/terraform-rename.log"
step_done

step "annotations answer a query; the dify_chat action streams its progress (Terraform >= 1.14)"
TERRAFORM_1_14=""
case "${DEMO_ACTIONS:-auto}" in
0) ;;
1) TERRAFORM_1_14="$("$REPO_ROOT/scripts/ensure-terraform-1.14.sh" | tail -n1)" ;;
*)
	for candidate in "${TF_ACC_TERRAFORM_1_14_PATH:-}" "$(command -v terraform || true)" "$CACHE_DIR/terraform-1.14.3/terraform"; do
		[[ -n "$candidate" && -x "$candidate" ]] || continue
		v="$(tf_cli_version "$candidate")"
		if [[ -n "$v" ]] && version_ge "$v" 1.14.0; then
			TERRAFORM_1_14="$candidate"
			break
		fi
	done
	;;
esac
if [[ -z "$TERRAFORM_1_14" ]]; then
	log "skipped: no Terraform >= 1.14 found (actions need it). DEMO_ACTIONS=1 make demo builds one (~10 min, once)."
else
	mkdir -p "$WORK_DIR/annotations"
	cp examples/annotations/*.tf "$WORK_DIR/annotations/"
	log "$(tf_cli_banner "$TERRAFORM_1_14"): examples/annotations"
	log "two annotations, the reply switch, and its smoke test (action_trigger): an annotation answers it"
	TF_DIR="$WORK_DIR/annotations" TERRAFORM="$TERRAFORM_1_14" tf_run terraform-annotations.log apply -auto-approve -compact-warnings
	grep -q 'answered from annotation' "$WORK_DIR/terraform-annotations.log" ||
		die "the smoke test was not answered by an annotation; see $WORK_DIR/terraform-annotations.log"
	log "terraform apply -invoke=action.dify_chat.agent: no annotation matches, the agent runs"
	TF_DIR="$WORK_DIR/annotations" TERRAFORM="$TERRAFORM_1_14" tf_run terraform-invoke.log apply -auto-approve -compact-warnings -invoke=action.dify_chat.agent
	grep -q 'Action complete: action.dify_chat.agent' "$WORK_DIR/terraform-invoke.log" ||
		die "the dify_chat action did not complete; see $WORK_DIR/terraform-invoke.log"
	TF_DIR="$WORK_DIR/annotations" TERRAFORM="$TERRAFORM_1_14" tf_run terraform-annotations-destroy.log destroy -auto-approve -compact-warnings
fi
step_done

step "terraform destroy and stop dify-mock"
tf_run terraform-destroy.log destroy -auto-approve -compact-warnings
# Dify's view after the destroy: the demo user has no conversations left.
left="$(http_get "$BASE_URL/conversations?user=demo" "Authorization: Bearer app-demo-not-a-secret")" ||
	die "GET $BASE_URL/conversations failed after the destroy"
[[ "$left" == *'"data":[]'* ]] || die "the mock still lists conversations for user demo after the destroy: $left"
log "GET /v1/conversations?user=demo -> $left"
requests="$(grep -c 'method=' "$MOCK_LOG" || true)"
stop_mock
grep -q 'shutting down' "$MOCK_LOG" || warn "dify-mock did not log a clean shutdown; see $MOCK_LOG"
log "dify-mock served $requests requests and is stopped"
step_done

SUCCEEDED=1
printf '\n%sDemo finished in %s.%s Nothing is left running; the temp dir is removed.\n' \
	"$_c_green$_c_bold" "$(elapsed "$TOTAL_START")" "$_c_reset" >&2
cat >&2 <<'EOF'
Next: `make test` runs every test. Try it by hand: docs/index.md ("Try it offline") and docs/mock/README.md.
EOF
