package appdsl_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func builtinNames(t *testing.T) []string {
	t.Helper()
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		t.Fatal(err)
	}
	return set.Names
}

func TestLoadDSLFile(t *testing.T) {
	set, _, err := appdsl.Load("testdata/legacy-helper.yml")
	if err != nil {
		t.Fatal(err)
	}
	if set.App == nil || set.App.Info.Name != "Legacy Helper" || set.App.Meta.Provenance != cassette.ProvenanceDSL {
		t.Fatalf("app %+v", set.App)
	}
	if !reflect.DeepEqual(set.Names, builtinNames(t)) || set.Default == "" {
		t.Errorf("chat cassettes %v (default %q), want the built-in ones %v", set.Names, set.Default, builtinNames(t))
	}
}

func TestLoadFolderWithDSL(t *testing.T) {
	dir := t.TempDir()
	// Named as Dify names an export, and .yaml, so the cassette loader
	// sees it and must skip it.
	copyFile(t, "testdata/support-agent.yml", filepath.Join(dir, "Support Agent.yaml"))
	copyFile(t, filepath.Join("..", "..", "..", "cassettes", "plain-answer.yaml"), filepath.Join(dir, "plain-answer.yaml"))
	set, warns, err := appdsl.Load(dir)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	if set.App == nil || set.App.Info.Name != "Support Agent" {
		t.Fatalf("app %+v", set.App)
	}
	if !reflect.DeepEqual(set.Names, []string{"plain-answer"}) {
		t.Errorf("chat cassettes %v, want the folder's own", set.Names)
	}

	// Without chat cassettes of its own the folder gets the built-in ones.
	only := t.TempDir()
	copyFile(t, "testdata/support-agent.yml", filepath.Join(only, "support-agent.yml"))
	set, _, err = appdsl.Load(only)
	if err != nil {
		t.Fatal(err)
	}
	if set.App.Info.Name != "Support Agent" || !reflect.DeepEqual(set.Names, builtinNames(t)) {
		t.Errorf("app %q, cassettes %v", set.App.Info.Name, set.Names)
	}
}

func TestLoadFolderWithoutDSLIsLoadDir(t *testing.T) {
	set, warns, err := appdsl.Load(filepath.Join("..", "..", "..", "cassettes"))
	if err != nil || warns != nil {
		t.Fatalf("Load: %v %v", err, warns)
	}
	want, err := cassette.LoadDir(filepath.Join("..", "..", "..", "cassettes"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(set.Names, want.Names) || !reflect.DeepEqual(set.App.Info, want.App.Info) || set.App.Meta.Provenance == cassette.ProvenanceDSL {
		t.Errorf("Load differs from cassette.LoadDir: %v %+v", set.Names, set.App.Meta)
	}
}

func TestLoadRefusals(t *testing.T) {
	two := t.TempDir()
	copyFile(t, "testdata/support-agent.yml", filepath.Join(two, "a.yml"))
	copyFile(t, "testdata/legacy-helper.yml", filepath.Join(two, "b.yaml"))

	both := t.TempDir()
	copyFile(t, "testdata/support-agent.yml", filepath.Join(both, "agent.yml"))
	copyFile(t, filepath.Join("..", "..", "..", "cassettes", "app.yaml"), filepath.Join(both, "app.yaml"))

	notDSL := filepath.Join(t.TempDir(), "notes.yml")
	if err := os.WriteFile(notDSL, []byte("title: not an app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	txt := filepath.Join(t.TempDir(), "app.txt")
	copyFile(t, "testdata/support-agent.yml", txt)

	big := t.TempDir()
	if err := os.WriteFile(filepath.Join(big, "big.yml"), make([]byte, appdsl.MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ path, want string }{
		{big, filepath.Join(big, "big.yml") + ": file is over Dify's 10485760-byte (10 MB) DSL limit"},
		{two, "2 Dify app DSL files (" + filepath.Join(two, "a.yml") + ", " + filepath.Join(two, "b.yaml") + ")"},
		{both, "two app descriptions, " + filepath.Join(both, "agent.yml") + " (Dify app DSL) and " + filepath.Join(both, "app.yaml")},
		{notDSL, "Missing app data"},
		{filepath.Join("..", "..", "..", "cassettes", "plain-answer.yaml"), "this is a dify-mock cassette"},
		{txt, "not a folder and not a Dify app DSL file"},
		{"testdata/secrets-workflow.yml", "app.mode is workflow"},
		{filepath.Join(t.TempDir(), "missing"), "no such file"},
	} {
		_, _, err := appdsl.Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v, want an error with %q", c.path, err, c.want)
		}
	}
}

// The example apps users start from load cleanly, each as the mode it
// says it is.
func TestExampleApps(t *testing.T) {
	for file, mode := range map[string]string{"support-agent.yml": "agent", "legacy-helper.yml": "agent-chat"} {
		set, warns, err := appdsl.Load(filepath.Join("..", "..", "..", "examples", "mock-apps", file))
		if err != nil || len(warns) != 0 {
			t.Errorf("%s: %v %v", file, err, warns)
			continue
		}
		if set.App.Info.Mode != mode || len(set.Names) == 0 {
			t.Errorf("%s: mode %q, %d cassettes", file, set.App.Info.Mode, len(set.Names))
		}
	}
}
