package mockserver

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Apps that keep the same cassette file share its compiled script; a file
// that differs, or a folder reloaded later, is compiled on its own.
func TestAppsShareTheScriptsOfIdenticalFiles(t *testing.T) {
	builtin, err := fs.ReadFile(cassettes.FS(), "tool-use.yaml")
	if err != nil {
		t.Fatal(err)
	}
	app, err := fs.ReadFile(cassettes.FS(), "app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := append([]byte(nil), builtin...)
	edited = append(edited, []byte("\n# edited\n")...)
	var cfgs []AppConfig
	for i, body := range [][]byte{builtin, builtin, edited} {
		dir := t.TempDir()
		for name, data := range map[string][]byte{"app.yaml": app, "tool-use.yaml": body} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		set, err := cassette.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, AppConfig{Name: []string{"a", "b", "c"}[i], Cassettes: set, CassetteDir: dir})
	}
	srv, err := New(Config{Apps: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	script := func(app string) any { return srv.byName[app].cat().scripts["tool-use"] }
	if script("a") != script("b") {
		t.Error("two apps with the same file compiled it twice")
	}
	if script("a") == script("c") {
		t.Error("an edited file shares the script of the original")
	}
	if _, err := srv.byName["b"].ReloadCassettes(); err != nil {
		t.Fatal(err)
	}
	if script("a") == script("b") {
		t.Error("a reloaded folder kept the script made for the start")
	}
}
