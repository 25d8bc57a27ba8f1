package lint_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
)

const dslTestdata = "../appdsl/testdata/"

func TestDSLFiles(t *testing.T) {
	r := lint.Paths([]string{dslTestdata + "support-agent.yml", dslTestdata + "legacy-helper.yml"})
	if !r.OK() || r.Files != 2 || r.Apps != 2 || r.Chats != 0 || len(r.Warnings) != 0 {
		t.Fatalf("report %+v, problems:\n%s", r, strings.Join(problems(r), "\n"))
	}
}

// What stops serve stops lint, with the text serve prints.
func TestDSLServeRefusalIsAProblem(t *testing.T) {
	path := dslTestdata + "secrets-workflow.yml"
	_, _, loadErr := appdsl.Load(path)
	r := lint.Paths([]string{path})
	if loadErr == nil || len(r.Problems) != 1 || r.Problems[0].String() != loadErr.Error() {
		t.Errorf("lint %v, serve %v", problems(r), loadErr)
	}
}

func TestDSLWarningsDoNotFail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.yml")
	if err := os.WriteFile(path, []byte("version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat, name: A}\nmodel_config: {pre_prompt: '', tone: calm}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := lint.Paths([]string{path})
	if !r.OK() || len(r.Warnings) != 1 || r.Warnings[0].String() != path+":4: unknown key model_config.tone: not an AppModelConfig field; Dify ignores it" {
		t.Errorf("problems %v, warnings %+v", problems(r), r.Warnings)
	}
}

// A key in a DSL is a problem, as in a cassette; a folder holds one app
// description, DSL or app.yaml.
func TestDSLFolderChecks(t *testing.T) {
	dir := t.TempDir()
	key := "app-" + strings.Repeat("K3y", 8) // built here so no key sits in the repository
	dsl := "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat, name: A}\nmodel_config: {pre_prompt: 'call with " + key + "'}\n"
	if err := os.WriteFile(filepath.Join(dir, "My App.yml"), []byte(dsl), 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile("../../../cassettes/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), app, 0o644); err != nil {
		t.Fatal(err)
	}
	r := lint.Paths([]string{dir})
	got := strings.Join(problems(r), "\n")
	if len(r.Problems) != 2 || !strings.Contains(got, "My App.yml:4: column") || !strings.Contains(got, "Dify API key") ||
		!strings.Contains(got, "more than one app description: My App.yml, app.yaml") || strings.Contains(got, key) {
		t.Errorf("problems:\n%s", got)
	}
	if r.Apps != 2 || r.Files != 2 {
		t.Errorf("report %+v", r)
	}
}
