package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const appdslTestdata = "../../internal/appdsl/testdata/"

// serve --cassettes takes a Dify app DSL file: the banner names its app and
// mode, and the DSL's warnings are logged with file and line.
func TestServeADSLFile(t *testing.T) {
	dsl := filepath.Join(t.TempDir(), "helper.yml")
	data, err := os.ReadFile(appdslTestdata + "legacy-helper.yml")
	if err != nil {
		t.Fatal(err)
	}
	// One unknown key, so there is a warning to log.
	if err := os.WriteFile(dsl, append(data, []byte("colour: red\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--cassettes", dsl)
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	if banner := s.out.String(); !strings.Contains(banner, `serving "Legacy Helper" (mode agent-chat) from `+dsl) {
		t.Errorf("banner:\n%s", banner)
	}
	// Log lines are written in batches (logwriter.go), so the warning may
	// follow the banner: wait for it as for the banner.
	warning := regexp.MustCompile(`msg="app DSL: unknown key \(top level\)\.colour: [^"]*" file=` + regexp.QuoteMeta(dsl) + ` line=(\d+)`)
	s.waitLog(warning)
	if _, body := getWithKey(t, base+"/info", "app-test"); !strings.Contains(body, `"mode":"agent-chat"`) {
		t.Errorf("/info %s", body)
	}
	s.stop()
}

// A DSL serve refuses fails with one line; lint reports the same text.
func TestServeAndLintRefuseAWorkflowDSLAlike(t *testing.T) {
	const marker = "TEST-ONLY-NOT-A-REAL-SECRET-7f3a9c"
	path := appdslTestdata + "secrets-workflow.yml"
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--cassettes", path}, &out, &errOut); code != 1 {
		t.Fatalf("serve: exit %d", code)
	}
	serveMsg := strings.TrimPrefix(strings.TrimSpace(errOut.String()), "dify-mock serve: ")
	if !strings.Contains(serveMsg, "app.mode is workflow") || strings.Contains(errOut.String()+out.String(), marker) {
		t.Errorf("serve: %s", errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := runLintCLI([]string{path}, &out, &errOut); code != 1 {
		t.Fatalf("lint: exit %d", code)
	}
	if got := strings.TrimSpace(out.String()); got != serveMsg {
		t.Errorf("lint says\n  %s\nserve says\n  %s", got, serveMsg)
	}
	if strings.Contains(out.String()+errOut.String(), marker) {
		t.Errorf("lint shows a secret value")
	}
}

func TestLintADSL(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runLintCLI([]string{appdslTestdata + "support-agent.yml"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	if got := out.String(); got != "ok: 1 file(s): 0 chat cassette(s), 1 app description(s)\n" {
		t.Errorf("stdout %q", got)
	}
	// Warnings are listed and do not fail the run.
	out.Reset()
	if code := runLintCLI([]string{appdslTestdata + "secrets-agent.yml"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(appdslTestdata)+`secrets-agent\.yml:\d+: warning: .+holds a secret`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "warning(s)") || strings.Contains(out.String(), "TEST-ONLY-NOT-A-REAL-SECRET") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
