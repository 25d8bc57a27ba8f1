package provider

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestAccConversationQueryGenerateConfig runs what a user runs to adopt
// existing conversations: `terraform query -generate-config-out=FILE`, then
// `terraform plan`, which must import every conversation and change nothing.
// The test harness cannot generate configuration from a query, so this test
// drives the CLI itself, with the provider served in-process (reattach).
func TestAccConversationQueryGenerateConfig(t *testing.T) {
	tf := terraform14(t)
	env := newMockEnv(t, mockserver.Config{})
	rec, _ := env.cassetteTurn("tool-use")
	ctx := context.Background()
	start := func(query string, inputs map[string]any) {
		stream, err := env.client().SendChatMessage(ctx, dify.ChatRequest{Query: query, User: "alice", Inputs: inputs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dify.Collect(stream); err != nil {
			t.Fatal(err)
		}
	}
	start(rec.Request.Query, map[string]any{"home_city": "Berlin", "budget": "medium"})
	start("Hello", map[string]any{})
	start("Hello", map[string]any{"home_city": "Porto"})

	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("main.tf", `terraform {
  required_providers {
    dify = { source = "difyops/dify" }
  }
}
`+env.providerBlock())
	write("conversations.tfquery.hcl", `list "dify_conversation" "alice" {
  provider = dify
  config {
    user = "alice"
  }
}
`)
	run := serveForCLI(t, tf, dir)
	run("init", "-input=false")
	out := run("query", "-generate-config-out=generated.tf")
	if n := strings.Count(out, "dify_conversation.alice"); n < 3 {
		t.Errorf("query listed %d results, want 3:\n%s", n, out)
	}
	gen, err := os.ReadFile(filepath.Join(dir, "generated.tf"))
	if err != nil {
		t.Fatalf("no generated configuration: %v\n%s", err, out)
	}
	for _, want := range []string{"identity = {", `user = "alice"`, `home_city = "Berlin"`, hclString(rec.Request.Query)} {
		if !strings.Contains(string(gen), want) {
			t.Errorf("generated configuration lacks %s:\n%s", want, gen)
		}
	}
	if n := strings.Count(string(gen), "import {"); n != 3 {
		t.Errorf("%d import blocks generated, want 3:\n%s", n, gen)
	}
	plan := run("plan", "-input=false")
	if !regexp.MustCompile(`Plan: 3 to import, 0 to add, 0 to change, 0 to destroy`).MatchString(plan) {
		t.Errorf("the generated configuration does not plan clean:\n%s\n\ngenerated.tf:\n%s", plan, gen)
	}
}

// terraform14 returns TF_ACC_TERRAFORM_PATH when acceptance tests run and it
// is Terraform >= 1.14; otherwise the test is skipped.
func terraform14(t *testing.T) string {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Skip("TF_ACC_TERRAFORM_PATH is not set")
	}
	out, err := exec.Command(tf, "version", "-json").Output()
	if err != nil {
		t.Fatalf("%s version: %v", tf, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -json: %v", tf, err)
	}
	have, err := goversion.NewVersion(v.Version)
	if err != nil {
		t.Fatal(err)
	}
	if have.LessThan(goversion.Must(goversion.NewVersion("1.14.0"))) {
		t.Skipf("Terraform CLI version %s is below minimum version 1.14.0: skipping test", v.Version)
	}
	return tf
}

// serveForCLI serves the provider in-process for the Terraform CLI (as the
// test harness does) and returns a function that runs tf in dir with it.
func serveForCLI(t *testing.T, tf, dir string) func(args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go func() {
		err := tf6server.Serve("registry.terraform.io/difyops/dify",
			providerserver.NewProtocol6(&difyProvider{version: "test"}),
			tf6server.WithDebug(ctx, reattach, closed), tf6server.WithLoggingSink(t))
		if err != nil {
			t.Errorf("serving the provider: %v", err)
		}
	}()
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-reattach:
	case <-time.After(30 * time.Second):
		t.Fatal("the provider server did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
		}
	})
	rc, err := json.Marshal(map[string]any{"registry.terraform.io/difyops/dify": map[string]any{
		"Protocol": cfg.Protocol, "ProtocolVersion": cfg.ProtocolVersion, "Pid": cfg.Pid, "Test": true,
		"Addr": map[string]string{"Network": cfg.Addr.Network(), "String": cfg.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rcFile := filepath.Join(t.TempDir(), "terraformrc")
	if err := os.WriteFile(rcFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tf, append([]string{args[0], "-no-color"}, args[1:]...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+string(rc), "TF_CLI_CONFIG_FILE="+rcFile,
			"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
