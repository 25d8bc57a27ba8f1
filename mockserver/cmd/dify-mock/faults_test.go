package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

func TestFaultsListsTheVocabulary(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"faults"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	for _, e := range fault.Vocabulary {
		if !strings.Contains(text, "\n  "+e.Syntax+"\n") || !strings.Contains(text, "example:     X-Dify-Mock-Fault: "+e.Example+"\n") {
			t.Errorf("%s or its example is missing", e.Syntax)
		}
		if _, err := fault.Parse(e.Example); err != nil {
			t.Errorf("example %q: %v", e.Example, err)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if len([]rune(line)) > 100 {
			t.Errorf("line too long: %q", line)
		}
	}
	if code := run(context.Background(), []string{"faults", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
	errOut.Reset()
	out.Reset()
	if code := run(context.Background(), []string{"help", "faults"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage: dify-mock faults") {
		t.Errorf("help faults: %d %s", code, out.String())
	}
}

func TestServeFaultFlag(t *testing.T) {
	o, err := parseServe(nil, func(k string) string {
		if k == "DIFY_MOCK_FAULT" {
			return "slow-headers:2s"
		}
		return ""
	}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil || o.fault != "slow-headers:2s" {
		t.Fatalf("env: %+v %v", o, err)
	}
	var errOut bytes.Buffer
	if code := runServe(context.Background(), []string{"--addr", "127.0.0.1:0", "--fault", "explode"}, &bytes.Buffer{}, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `unknown fault "explode". Known faults:`) {
		t.Errorf("bad --fault: exit %d %s", code, errOut.String())
	}
	var help bytes.Buffer
	run(context.Background(), []string{"help", "serve"}, &help, &errOut)
	if !strings.Contains(help.String(), "--fault") || !strings.Contains(help.String(), "dify-mock faults") || !strings.Contains(help.String(), fault.Header) {
		t.Errorf("serve --help does not explain faults:\n%s", help.String())
	}
}
