package main

import (
	"context"
	"fmt"
	"io"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
)

const lintAbout = `Checks cassettes and Dify app DSL files: files, or folders (every *.yaml
directly inside and a DSL *.yml; subfolders such as scenarios/ are skipped).
Reports every problem with its file, line, interaction and frame, and exits 1
if there is any. A DSL file is read as serve reads it (docs/mock/dsl.md): what
would stop serve is a problem, what serve would only warn about is a warning.

Checks: the cassette format (go-vcr v2 + dify_mock block, X-Dify-Mock-Frames
offsets and lengths), SSE frame syntax, event order (one terminal message_end
or error; only TTS and pings after message_end; one closing message before
it), required fields per event (docs/api §2.5), ids consistent within a turn,
follow-up turns that continue the cassette's own conversation, and secrets
(Dify keys, bearer tokens, credential headers and fields). In a folder: at
most one default cassette, at most one app description, distinct queries.`

// runLint is `dify-mock lint`: exit status 0 when every path is clean, 1
// when a problem was found, 2 on bad usage.
func runLint(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("lint", "dify-mock lint PATH...", lintAbout)
	f.footer = "Examples:\n  dify-mock lint cassettes/\n  dify-mock lint examples/mock-apps/support-agent.yml"
	if err := f.parse(args, noEnv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if len(f.args) == 0 {
		return exitCode(f.usageError(stderr, "no cassette file or folder given"))
	}
	r := lint.Paths(f.args)
	for _, p := range r.Problems {
		fmt.Fprintln(stdout, p)
	}
	for _, w := range r.Warnings {
		w.Message = "warning: " + w.Message
		fmt.Fprintln(stdout, w)
	}
	summary := fmt.Sprintf("%d file(s): %d chat cassette(s), %d app description(s)", r.Files, r.Chats, r.Apps)
	if len(r.Warnings) > 0 {
		summary += fmt.Sprintf(", %d warning(s)", len(r.Warnings))
	}
	if !r.OK() {
		fmt.Fprintf(stderr, "dify-mock lint: %d problem(s) in %s\n", len(r.Problems), summary)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s\n", summary)
	return 0
}
