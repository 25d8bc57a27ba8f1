package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Several apps behind one dify-mock (docs/mock/apps.md), configured the way
// a platform team configures two Dify apps in one root module: a provider
// alias per app, each with that app's API key.
//
// These tests run the provider as a built binary that Terraform installs
// from a local mirror, not served in-process: Terraform starts one provider
// process per provider configuration, but an in-process (reattached)
// provider is one process that every alias shares, and the last Configure
// would then win for all of them.

// acceptanceTerraform returns TF_ACC_TERRAFORM_PATH, or skips the test when
// acceptance tests do not run.
func acceptanceTerraform(t *testing.T) string {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Skip("TF_ACC_TERRAFORM_PATH is not set")
	}
	return tf
}

// mirroredProvider builds this provider into a filesystem mirror (as
// version 0.0.1, under both registry hosts, so Terraform and OpenTofu find
// it) and returns a CLI configuration that installs difyops/dify from there
// and nothing from the network.
func mirroredProvider(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	platform := runtime.GOOS + "_" + runtime.GOARCH
	var built string
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		bin := filepath.Join(dir, "mirror", host, "difyops", "dify", "0.0.1", platform, "terraform-provider-dify_v0.0.1")
		if built == "" {
			out, err := exec.Command("go", "build", "-o", bin, "github.com/difyops/terraform-provider-dify").CombinedOutput()
			if err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			built = bin
			continue
		}
		data, err := os.ReadFile(built)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(bin), 0o755)
		}
		if err == nil {
			err = os.WriteFile(bin, data, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rc := filepath.Join(dir, "terraformrc")
	cfg := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/difyops/dify", "registry.opentofu.org/difyops/dify"]
  }
}
`, filepath.Join(dir, "mirror"))
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

// mockApp is one app of a several-app mock: its name, key and the set it
// serves (the expected values come from it, not from literals).
type mockApp struct {
	name, key string
	set       *cassette.Set
}

// twoAppMock starts one dify-mock serving the two DSL apps of
// examples/mock-apps: "support" (a New Agent) and "helper" (a legacy
// Agent), each reached by its default key app-NAME.
func twoAppMock(t *testing.T) (*mockEnv, []mockApp) {
	t.Helper()
	var apps []mockApp
	var cfgs []mockserver.AppConfig
	for _, a := range []struct{ name, file string }{{"support", "support-agent.yml"}, {"helper", "legacy-helper.yml"}} {
		set, _, err := mockserver.LoadApp(filepath.Join("..", "examples", "mock-apps", a.file))
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, mockApp{name: a.name, key: mockserver.DefaultAppKey(a.name), set: set})
		cfgs = append(cfgs, mockserver.AppConfig{Name: a.name, Cassettes: set})
	}
	return newMockEnv(t, mockserver.Config{Apps: cfgs}), apps
}

// recorded decodes one of an app description's responses.
func (a mockApp) recorded(t *testing.T, path string, out any) {
	t.Helper()
	r, ok := a.set.App.Responses[path]
	if !ok {
		t.Fatalf("app %s has no %s", a.name, path)
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		t.Fatalf("app %s %s: %v", a.name, path, err)
	}
}

// TestAccMultiApp_aliases: two provider aliases, one per app, against one
// mock. Each alias reads its own app's info and parameters and creates a
// conversation in its own app; the same `user` is two end users.
func TestAccMultiApp_aliases(t *testing.T) {
	acceptanceTerraform(t)
	t.Setenv("TF_CLI_CONFIG_FILE", mirroredProvider(t))
	env, apps := twoAppMock(t)
	var config strings.Builder
	for _, a := range apps {
		fmt.Fprintf(&config, `
provider "dify" {
  alias           = %[1]q
  base_url        = %[2]q
  api_key         = %[3]q
  user            = "same-user"
  retry_max_delay = "50ms"
}
data "dify_app_info" %[1]q {
  provider = dify.%[1]s
}
data "dify_app_parameters" %[1]q {
  provider = dify.%[1]s
}
resource "dify_conversation" %[1]q {
  provider = dify.%[1]s
  query    = "Hello"
  # support requires customer_name, helper city: each gets the one it declares.
  inputs = {
    for item in data.dify_app_parameters.%[1]s.user_input_form : item.variable => "x"
    if item.required
  }
}
resource "dify_file" %[1]q {
  provider = dify.%[1]s
  filename = "notes.md"
  content  = "for %[1]s"
}
data "dify_end_user" %[1]q {
  provider = dify.%[1]s
  id       = dify_file.%[1]s.created_by
}
`, a.name, env.BaseURL, a.key)
	}
	var checks []statecheck.StateCheck
	for _, a := range apps {
		var info struct{ Name, Mode string }
		a.recorded(t, "/info", &info)
		var params struct {
			Opening string `json:"opening_statement"`
		}
		a.recorded(t, "/parameters", &params)
		if info.Name == "" || params.Opening == "" {
			t.Fatalf("app %s: no name or opening statement to compare (%+v, %+v)", a.name, info, params)
		}
		checks = append(checks,
			statecheck.ExpectKnownValue("data.dify_app_info."+a.name, tfjsonpath.New("name"), knownvalue.StringExact(info.Name)),
			statecheck.ExpectKnownValue("data.dify_app_info."+a.name, tfjsonpath.New("mode"), knownvalue.StringExact(info.Mode)),
			statecheck.ExpectKnownValue("data.dify_app_parameters."+a.name, tfjsonpath.New("opening_statement"), knownvalue.StringExact(params.Opening)),
			statecheck.ExpectKnownValue("dify_conversation."+a.name, tfjsonpath.New("user"), knownvalue.StringExact("same-user")),
			statecheck.ExpectKnownValue("data.dify_end_user."+a.name, tfjsonpath.New("external_user_id"), knownvalue.StringExact("same-user")),
		)
	}
	differ := compare.ValuesDiffer()
	checks = append(checks,
		// Two apps, two different descriptions (else the checks above prove nothing).
		statecheck.CompareValuePairs("data.dify_app_info.support", tfjsonpath.New("name"), "data.dify_app_info.helper", tfjsonpath.New("name"), differ),
		// The same user string is one end user per app, each bound to its app.
		statecheck.CompareValuePairs("dify_file.support", tfjsonpath.New("created_by"), "dify_file.helper", tfjsonpath.New("created_by"), differ),
		statecheck.CompareValuePairs("data.dify_end_user.support", tfjsonpath.New("app_id"), "data.dify_end_user.helper", tfjsonpath.New("app_id"), differ),
		statecheck.CompareValuePairs("dify_conversation.support", tfjsonpath.New("id"), "dify_conversation.helper", tfjsonpath.New("id"), differ),
	)
	resource.Test(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"dify": {Source: "difyops/dify"}},
		Steps: []resource.TestStep{{
			Config:            config.String(),
			ConfigStateChecks: checks,
		}, {
			// Refreshing reads each conversation back through its own app's
			// key: nothing to change.
			Config:   config.String(),
			PlanOnly: true,
		}},
	})
	// After destroy, as the mock's control API sees it: each app deleted its
	// own conversation (through its own key) and keeps one end user,
	// "same-user" (uploads, and so their end users, stay, as in Dify).
	for _, a := range apps {
		var sum struct {
			EndUsers []struct{ User string } `json:"end_users"`
			Totals   map[string]int
		}
		resp, err := http.Get(strings.TrimSuffix(env.BaseURL, "/v1") + "/__mock/api/state?app=" + a.name)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&sum)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.EndUsers) != 1 || sum.EndUsers[0].User != "same-user" || sum.Totals["conversations"] != 0 {
			t.Errorf("app %s after destroy: %+v", a.name, sum)
		}
	}
}

// TestAccMultiApp_example runs examples/multi-app as its README says a user
// runs it: its .tf files copied into a folder, `terraform init`, `apply`
// with the two apps' keys, `output`, `destroy` — against one mock serving
// the two DSL apps the README starts it with.
func TestAccMultiApp_example(t *testing.T) {
	tf := acceptanceTerraform(t)
	rc := mirroredProvider(t)
	env, apps := twoAppMock(t)
	src := filepath.Join("..", "examples", "multi-app")
	dir := t.TempDir()
	tfs, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(tfs) == 0 {
		t.Fatalf("no .tf files in %s (%v)", src, err)
	}
	for _, f := range tfs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := []string{"-var", "base_url=" + env.BaseURL}
	for _, a := range apps {
		vars = append(vars, "-var", a.name+"_api_key="+a.key)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tf, append([]string{args[0], "-no-color"}, args[1:]...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(tf), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("init", "-input=false")
	run(append([]string{"apply", "-auto-approve", "-input=false"}, vars...)...)
	var out struct {
		Apps          struct{ Value map[string]string }
		Conversations struct{ Value map[string]string }
		EndUsers      struct{ Value map[string]string } `json:"end_users"`
	}
	if err := json.Unmarshal([]byte(run("output", "-json")), &out); err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		var info struct{ Name, Mode string }
		a.recorded(t, "/info", &info)
		if want := info.Name + " (" + info.Mode + ")"; out.Apps.Value[a.name] != want {
			t.Errorf("output apps.%s = %q, want %q", a.name, out.Apps.Value[a.name], want)
		}
		if out.Conversations.Value[a.name] == "" || out.EndUsers.Value[a.name] == "" {
			t.Errorf("app %s: conversation %q, end user %q", a.name, out.Conversations.Value[a.name], out.EndUsers.Value[a.name])
		}
	}
	if eu := out.EndUsers.Value; eu["support"] == eu["helper"] {
		t.Errorf("the same user is one end user in both apps: %v", eu)
	}
	run(append([]string{"destroy", "-auto-approve", "-input=false"}, vars...)...)
}
