package appdsl

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// IsDSLName reports whether a file name is one a DSL file may have: Dify
// exports NAME.yml; .yaml is accepted too.
func IsDSLName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yml" || ext == ".yaml"
}

// ReadFile reads a file of at most MaxSize bytes; a larger one is an
// *Error (Dify refuses DSL files over 10 MB) without being read whole.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, &Error{File: path, Reason: fmt.Sprintf("file is over Dify's %d-byte (10 MB) DSL limit", MaxSize)}
	}
	return data, nil
}

// FindInDir returns the Dify app DSL files directly inside dir (*.yml and
// *.yaml files that cassette.IsAppDSL recognises), sorted.
func FindInDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !IsDSLName(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := ReadFile(path)
		if err != nil {
			// A *.yml is only ever a DSL: Load reports why it cannot be
			// read. A *.yaml that large is the cassette loader's to refuse.
			if strings.EqualFold(filepath.Ext(path), ".yml") {
				out = append(out, path)
			}
			continue
		}
		if cassette.IsAppDSL(data) {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Load reads what `dify-mock serve --cassettes PATH` serves:
//
//   - a DSL file (*.yml or *.yaml): the app it describes, with the
//     built-in chat cassettes;
//   - a folder with one DSL file: that app, with the folder's chat
//     cassettes (cassette.LoadDir), or the built-in ones when it has none;
//   - any other folder: cassette.LoadDir, as before.
//
// Two DSL files in a folder, or a DSL file next to an app.yaml, are an
// error naming both. The warnings are Parse's.
func Load(path string) (*cassette.Set, []Warning, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cassette folder or DSL file: %w", err)
	}
	if !st.IsDir() {
		if !IsDSLName(path) {
			return nil, nil, fmt.Errorf("%s: not a folder and not a Dify app DSL file (*.yml or *.yaml)", path)
		}
		data, err := ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		// Named on its own, the file is read as a DSL whatever it holds,
		// so a broken one gets Parse's precise reason.
		app, warns, err := Parse(data, path)
		if err != nil {
			return nil, warns, err
		}
		set, err := builtinChats()
		if err != nil {
			return nil, warns, err
		}
		set.App = app
		return set, warns, nil
	}
	dsls, err := FindInDir(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cassette folder: %w", err)
	}
	switch {
	case len(dsls) == 0:
		set, err := cassette.LoadDir(path)
		return set, nil, err
	case len(dsls) > 1:
		return nil, nil, fmt.Errorf("%s: %d Dify app DSL files (%s); a folder describes one app, keep one", path, len(dsls), strings.Join(dsls, ", "))
	}
	data, err := ReadFile(dsls[0])
	if err != nil {
		return nil, nil, err
	}
	app, warns, err := Parse(data, dsls[0])
	if err != nil {
		return nil, warns, err
	}
	set, err := cassette.LoadDir(path)
	if err != nil {
		return nil, warns, err
	}
	if set.App != nil {
		return nil, warns, fmt.Errorf("%s: two app descriptions, %s (Dify app DSL) and %s; keep one", path, dsls[0], set.App.Path)
	}
	if len(set.Names) == 0 {
		if set, err = builtinChats(); err != nil {
			return nil, warns, err
		}
	}
	set.App = app
	return set, warns, nil
}

// builtinChats is the built-in cassette set (what mockserver.BuiltinSet
// loads), whose own app description a DSL replaces.
func builtinChats() (*cassette.Set, error) {
	return cassette.LoadFS(cassettes.FS(), "built-in cassettes")
}
