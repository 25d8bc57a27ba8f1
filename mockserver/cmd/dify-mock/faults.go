package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

func runFaults(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("faults", "dify-mock faults",
		"Lists the fault vocabulary: what each fault does, an example and what a client sees.")
	if err := f.parse(args, noEnv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if err := f.noArgs(stderr); err != nil {
		return exitCode(err)
	}
	writeFaults(stdout)
	return 0
}

// writeFaults prints the vocabulary (fault.Vocabulary) as a reference.
func writeFaults(w io.Writer) {
	fmt.Fprintf(w, `dify-mock faults: make the mock misbehave on purpose (docs/mock/faults.md).

Pick a fault
  per request   header  %s: SPEC
  per cassette  dify_mock.fault: SPEC in the cassette file (its chat turns)
  server-wide   dify-mock serve --fault SPEC  (env DIFY_MOCK_FAULT)
The header wins over the cassette, the cassette over --fault;
"%s: none" switches both off. Responses that carry a fault
name it in the %s response header.

Combine one slow-headers with one other fault: slow-headers:2s,error-after:3
Durations: 500ms, 2s, 1m. Values are percent-decoded: write %%3B for ";",
%%2C for ",", %%25 for "%%", and percent-encode non-ASCII text in headers.
`, fault.Header, fault.Header, fault.Header)
	sections := []struct{ where, title string }{
		{fault.WhereResponse, "Before the response: every route, right after authentication; on\nPOST /chat-messages once the request is valid and a cassette is picked.\nNothing is stored for a refused chat message."},
		{fault.WhereStream, "Inside a chat stream (POST /chat-messages; ignored on other routes).\nK counts the frames sent before the fault, keep-alive pings included; the\nfault takes the next frame's place at that frame's time. A K past the\nturn's last frame takes the place of its end (message_end, a recorded error\nor a run-limit error). The stored message is what was sent (error-after:\nstatus error, with the message)."},
		{"", "Other"},
	}
	for _, sec := range sections {
		fmt.Fprintf(w, "\n%s\n", sec.title)
		for _, e := range fault.Vocabulary {
			if e.Where != sec.where {
				continue
			}
			fmt.Fprintf(w, "\n  %s\n", e.Syntax)
			for _, line := range wrap(e.Summary, 72) {
				fmt.Fprintf(w, "      %s\n", line)
			}
			fmt.Fprintf(w, "      example:     %s: %s\n", fault.Header, e.Example)
			for i, line := range wrap(e.Sees, 59) {
				if i == 0 {
					fmt.Fprintf(w, "      client sees: %s\n", line)
				} else {
					fmt.Fprintf(w, "                   %s\n", line)
				}
			}
		}
	}
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
