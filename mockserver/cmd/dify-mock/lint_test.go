package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// lintTestdata holds the lint package's valid and broken cassettes.
const lintTestdata = "../../internal/lint/testdata/"

func runLintCLI(args []string, stdout, stderr io.Writer) int {
	return run(context.Background(), append([]string{"lint"}, args...), stdout, stderr)
}

func TestLintExitStatus(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runLintCLI([]string{"../../../cassettes"}, &out, &errOut); code != 0 {
		t.Errorf("clean folder: exit %d, stdout %q stderr %q", code, out.String(), errOut.String())
	}
	if !strings.HasPrefix(out.String(), "ok: ") {
		t.Errorf("clean folder: stdout %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := runLintCLI([]string{lintTestdata + "valid.yaml", lintTestdata + "broken/usage.yaml", lintTestdata + "broken/ids.yaml"}, &out, &errOut); code != 1 {
		t.Errorf("broken files: exit %d", code)
	}
	if n := strings.Count(out.String(), "\n"); n != 4 {
		t.Errorf("want all 4 problems listed, got %d lines:\n%s", n, out.String())
	}
	if !strings.Contains(errOut.String(), "4 problem(s) in 3 file(s)") {
		t.Errorf("stderr %q", errOut.String())
	}
	if code := runLintCLI(nil, &out, &errOut); code != 2 {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
	if code := runLintCLI([]string{lintTestdata + "does-not-exist"}, &out, &errOut); code != 1 {
		t.Errorf("missing path: exit %d, want 1", code)
	}
}
