// Package scripts holds the tests of the shell scripts in this folder: the
// scripts themselves are bash, the checks of them are Go so that `go test`
// (the unit stage of scripts/test.sh) runs them.
package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the repository root: this file's folder's parent.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Dir(filepath.Dir(file))
}

// A finding is a pipeline that ends in a reader which may stop reading
// before its writer is done.
type finding struct {
	Line    int    // 1-based line of the logical line's start
	Segment string // the reader, as written
}

var (
	grepEarly = regexp.MustCompile(`(^|\s)(-[a-zA-Z]*[qlLm][a-zA-Z0-9]*|--quiet|--silent|--max-count\S*|--files-with(out)?-match\S*)(\s|$)`)
	sedQuit   = regexp.MustCompile(`(^|[\s;{}'"0-9$/])[qQ]([\s;}'"0-9]|$)`)
	awkExit   = regexp.MustCompile(`\bexit\b`)
	orTrue    = regexp.MustCompile(`^[^|;&]*\|\|\s*(true|:)(\s|$|[;)])`)
	assign    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)
)

// earlyClosers returns the pipelines of a shell text whose reader may exit
// before it has read everything: head, grep -q/-m/-l, sed with a q command,
// awk with exit, read. Under `set -o pipefail` such a pipeline fails with
// 141 whenever the writer is still writing when the reader leaves (SIGPIPE).
// A pipeline followed by `|| true` is accepted: its status was not wanted.
// Comment lines are skipped; quotes are respected, so a `|` inside 's|a|b|'
// is no pipe.
func earlyClosers(text string) []finding {
	var out []finding
	for _, ll := range logicalLines(text) {
		for _, seg := range pipeReaders(ll.text) {
			words := strings.Fields(strings.TrimLeft(seg.text, "{( \t"))
			for len(words) > 0 && (words[0] == "exec" || words[0] == "command" || assign.MatchString(words[0])) {
				words = words[1:]
			}
			if len(words) == 0 {
				continue
			}
			args := strings.Join(words[1:], " ")
			var early bool
			switch filepath.Base(words[0]) {
			case "head", "read":
				early = true
			case "grep", "egrep", "fgrep":
				early = grepEarly.MatchString(args)
			case "sed":
				early = sedQuit.MatchString(args)
			case "awk", "gawk", "mawk", "nawk":
				early = awkExit.MatchString(args)
			}
			if early && !orTrue.MatchString(ll.text[seg.end:]) {
				out = append(out, finding{Line: ll.line, Segment: strings.TrimSpace(seg.text)})
			}
		}
	}
	return out
}

type logicalLine struct {
	line int
	text string
}

// logicalLines joins continued lines (a trailing backslash, or a trailing
// pipe whose reader is on the next line) and drops comment lines.
func logicalLines(text string) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") && cur.Len() == 0 {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		trimmed := strings.TrimRight(l, " \t")
		switch {
		case strings.HasSuffix(trimmed, "\\"):
			cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
			cur.WriteByte(' ')
		case strings.HasSuffix(trimmed, "|") && !strings.HasSuffix(trimmed, "||"):
			cur.WriteString(trimmed)
			cur.WriteByte(' ')
		default:
			cur.WriteString(l)
			out = append(out, logicalLine{line: start, text: cur.String()})
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, logicalLine{line: start, text: cur.String()})
	}
	return out
}

type segment struct {
	text string
	end  int // offset just past the segment in the logical line
}

// pipeReaders returns the commands that read a pipe (what follows a `|` or
// `|&`, up to the next control operator or the `)` that closes its command
// substitution), skipping `||`, quoted text and escapes; `$(...)` inside
// double quotes is code again.
func pipeReaders(line string) []segment {
	type frame struct {
		quoted   bool // inside "..."
		inReader bool
		segStart int
	}
	var out []segment
	stack := []frame{{}}
	closeSeg := func(i int) {
		f := &stack[len(stack)-1]
		if f.inReader {
			out = append(out, segment{text: line[f.segStart:i], end: i})
			f.inReader = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		top := &stack[len(stack)-1]
		if c == '\\' {
			i++
			continue
		}
		if c == '$' && i+1 < len(line) && line[i+1] == '(' {
			stack = append(stack, frame{})
			i++
			continue
		}
		if top.quoted {
			if c == '"' && len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		switch c {
		case '\'':
			if j := strings.IndexByte(line[i+1:], '\''); j >= 0 {
				i += j + 1
			} else {
				i = len(line)
			}
		case '"':
			stack = append(stack, frame{quoted: true})
		case '(':
			stack = append(stack, frame{})
		case ')':
			closeSeg(i)
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case '|':
			closeSeg(i)
			if i+1 < len(line) && line[i+1] == '|' {
				i++
				continue
			}
			if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
			top.inReader = true
			top.segStart = i + 1
		case '&':
			// A redirection (>&2, 2>&1, &>file) is part of the command.
			if (i > 0 && (line[i-1] == '>' || line[i-1] == '<')) || (i+1 < len(line) && line[i+1] == '>') {
				continue
			}
			closeSeg(i)
		case ';', '\n':
			closeSeg(i)
		}
	}
	for len(stack) > 0 {
		closeSeg(len(line))
		stack = stack[:len(stack)-1]
	}
	return out
}

// shellFences returns the shell code blocks of a Markdown text (```sh,
// bash, shell, console), with everything else blanked so line numbers stay.
func shellFences(md string) string {
	lines := strings.Split(md, "\n")
	in := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			if !in {
				lang := strings.TrimPrefix(t, "```")
				in = lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
			} else {
				in = false
			}
			lines[i] = ""
			continue
		}
		if !in {
			lines[i] = ""
		} else if after, ok := strings.CutPrefix(t, "$ "); ok { // console prompts
			lines[i] = after
		}
	}
	return strings.Join(lines, "\n")
}

// TestNoEarlyClosingReaderUnderPipefail: every script here runs under
// `set -o pipefail`, and so do the Makefile's recipes (.SHELLFLAGS); the
// docs' shell snippets are copied into such scripts. `terraform version |
// head -n1` failed one run of `make demo` in five with exit 141.
// lib.sh's first_line reads all of its input instead.
func TestNoEarlyClosingReaderUnderPipefail(t *testing.T) {
	root := repoRoot(t)
	var files []string
	for _, pattern := range []string{"scripts/*.sh", "Makefile", ".ci/run", "README.md", "CONTRIBUTING.md", "bench/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(p) {
			case ".md", ".sh", ".yml", ".yaml":
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 20 {
		t.Fatalf("found only %d files to check; is the repository layout different?", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel, _ := filepath.Rel(root, f)
		switch {
		case strings.HasSuffix(f, ".md"):
			text = shellFences(text)
		case filepath.Base(f) == "Makefile":
			text = strings.ReplaceAll(text, "$$", "$")
		}
		for _, fd := range earlyClosers(text) {
			t.Errorf("%s:%d: a pipeline into %q can fail with 141 under pipefail when the reader exits first; "+
				"use first_line (scripts/lib.sh), capture the output first, or read it all (`|| true` only where the status does not matter)",
				rel, fd.Line, fd.Segment)
		}
	}
}

func TestEarlyClosers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{`v="$(terraform version | head -n1)"`, []string{"head -n1"}},
		{"x=\"$(terraform version -json |\n\tsed -n 's/a/b/p' | head -n1)\"", []string{"head -n1"}},
		{`printf '%s\n' "${a[@]}" | grep -qxF "$p" || continue`, []string{`grep -qxF "$p"`}},
		{`cmd | grep -m 1 x`, []string{"grep -m 1 x"}},
		{`cmd | grep --quiet x`, []string{"grep --quiet x"}},
		{`cmd | sed -n '/x/{p;q}'`, []string{`sed -n '/x/{p;q}'`}},
		{`cmd | sed 1q`, []string{"sed 1q"}},
		{`cmd | awk 'NR==1 {print; exit}'`, []string{`awk 'NR==1 {print; exit}'`}},
		{`cmd | { IFS= read -r line; }`, []string{"{ IFS= read -r line"}},
		{"tar=\"$(ls -t a | \\\n  head -n1)\"", []string{"head -n1"}},
		// Accepted: readers that read everything, `|| true`, quoted pipes, comments.
		{`git diff | head -n 80 >&2 || true`, nil},
		{`cmd | first_line`, nil},
		{`cmd | sed -n 's|^  pprof *\(http://x\)/.*|\1|p' | first_line`, nil},
		{`cmd | sed -n 's/quit/q/p'`, nil},
		{`cmd | grep -v x | tail -n1`, nil},
		{`grep -q x file || die "no"`, nil},
		{`a || b | tee log`, nil},
		{`# cmd | head -n1`, nil},
		{`echo "a | head" | cat`, nil},
		{`cmd | while IFS= read -r l; do echo "$l"; done`, nil},
		{`cmd | awk '{ print; fflush() }'`, nil},
	} {
		var got []string
		for _, f := range earlyClosers(tc.text) {
			got = append(got, f.Segment)
		}
		if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("earlyClosers(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// writeFakeTerraform writes a `terraform` that prints its version line and
// then much more, one line per write, as a Terraform with many providers or
// a slow terminal would: more than a pipe holds, so a reader that leaves
// after the first line always makes it die of SIGPIPE.
func writeFakeTerraform(t *testing.T) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "terraform")
	script := `#!/usr/bin/env bash
if [[ "${2:-}" == -json ]]; then
	printf '{\n  "terraform_version": "1.99.0",\n'
else
	echo "Terraform v1.99.0"
	echo "on linux_amd64"
fi
for ((i = 0; i < 4000; i++)); do
	echo "+ provider registry.terraform.io/example/p$i v1.0.$i -- padding padding padding"
done
[[ "${2:-}" != -json ]] || echo '  "platform": "linux_amd64"}'
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake
}

func runBash(t *testing.T, script string, env ...string) (string, int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command(bash, "-c", "set -euo pipefail\n"+script)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit):
		t.Logf("stderr: %s", stderr.String())
		return stdout.String(), exit.ExitCode()
	default:
		t.Fatal(err)
		return "", -1
	}
}

// TestDemoFindsTerraformWhileItStillWrites runs step 2 of scripts/demo.sh
// ("find a Terraform CLI") against a Terraform that keeps writing after its
// first line. The same pipeline with head -n1 must fail with 141 here, or
// the fake proves nothing.
func TestDemoFindsTerraformWhileItStillWrites(t *testing.T) {
	fake := writeFakeTerraform(t)
	if _, rc := runBash(t, `"$FAKE" version | head -n1 >/dev/null`, "FAKE="+fake); rc != 141 {
		t.Fatalf("head -n1 on the fake terraform exited %d, want 141: the fake does not reproduce the failure", rc)
	}
	// The demo's step, as scripts/demo.sh runs it.
	out, rc := runBash(t, `source scripts/lib.sh
TERRAFORM="$(scripts/ensure-terraform.sh | tail -n1)"
[[ "$TERRAFORM" == "$FAKE" ]] || die "ensure-terraform.sh chose $TERRAFORM"
TF_VERSION="$(tf_cli_banner "$TERRAFORM")"
printf '%s|%s\n' "$TF_VERSION" "$(tf_cli_version "$TERRAFORM")"`,
		"FAKE="+fake, "TF_ACC_TERRAFORM_PATH="+fake, "TF_FORCE_BUILD=0")
	if rc != 0 || out != "Terraform v1.99.0|1.99.0\n" {
		t.Fatalf("the demo's step printed %q and exited %d, want %q and 0", out, rc, "Terraform v1.99.0|1.99.0\n")
	}
}

// TestShellFences: only the shell blocks of a Markdown file are checked,
// prompts stripped, with their line numbers.
func TestShellFences(t *testing.T) {
	md := "Prose with a | head in it.\n```hcl\nx = a | head\n```\n```sh\n$ terraform version | head -n1\n```\n```console\nmake demo\n```\n"
	got := earlyClosers(shellFences(md))
	if len(got) != 1 || got[0].Line != 6 || got[0].Segment != "head -n1" {
		t.Fatalf("earlyClosers(shellFences(...)) = %+v, want one finding, line 6, head -n1", got)
	}
}
