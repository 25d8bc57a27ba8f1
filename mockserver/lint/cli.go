package lint

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Usage is the help text of `dify-mock lint`.
const Usage = `Usage: dify-mock lint PATH...

Checks cassettes: files, or folders (every *.yaml directly inside; subfolders
such as scenarios/ are skipped). Reports every problem with its file, line,
interaction and frame, and exits 1 if there is any.

Checks: the cassette format (go-vcr v2 + dify_mock block, X-Dify-Mock-Frames
offsets and lengths), SSE frame syntax, event order (one terminal message_end
or error; only TTS and pings after message_end; one closing message before
it), required fields per event (API §2.5), ids consistent within a turn,
follow-up turns that continue the cassette's own conversation, and secrets
(Dify keys, bearer tokens, credential headers and fields). In a folder: at
most one default cassette, at most one app description, distinct queries.

Example:
  dify-mock lint cassettes/
`

// Main runs `dify-mock lint`: exit status 0 when every path is clean, 1
// when a problem was found, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Usage)
			return 0
		}
		fmt.Fprintf(stderr, "dify-mock lint: %v\n\n%s", err, Usage)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "dify-mock lint: no cassette file or folder given\n\n%s", Usage)
		return 2
	}
	r := Paths(fs.Args())
	for _, p := range r.Problems {
		fmt.Fprintln(stdout, p)
	}
	summary := fmt.Sprintf("%d file(s): %d chat cassette(s), %d app description(s)", r.Files, r.Chats, r.Apps)
	if !r.OK() {
		fmt.Fprintf(stderr, "dify-mock lint: %d problem(s) in %s\n", len(r.Problems), summary)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s\n", summary)
	return 0
}
