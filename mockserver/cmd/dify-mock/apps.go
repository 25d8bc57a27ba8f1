package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/appdsl"
)

// Several apps in one serve (docs/mock/apps.md): --app NAME=PATH,
// --apps DIR, --app-key NAME=KEY (or DIFY_MOCK_APP_KEYS) and a keys.txt
// in an app folder.

// appKeysEnv holds --app-key values, comma-separated NAME=KEY pairs.
const appKeysEnv = "DIFY_MOCK_APP_KEYS"

// keysFile is the file of an app folder that lists the app's API keys.
const keysFile = "keys.txt"

// appSpec is one app named on the command line, before it is loaded.
type appSpec struct {
	name, path string
}

// servedApp is one loaded app: its configuration and where it came from
// (for the banner).
type servedApp struct {
	cfg mockserver.AppConfig
	// explicitKeys: its keys were given (--app-key, keys.txt) rather than
	// defaulted to app-NAME, which anyone can guess.
	explicitKeys bool
}

// appSpecs are the apps of --app (in order) and --apps (its subfolders,
// sorted). Each error is one line naming the flag and the app.
func appSpecs(apps []string, appsDir string) ([]appSpec, error) {
	var out []appSpec
	seen := map[string]string{}
	add := func(s appSpec, from string) error {
		if err := mockserver.CheckAppName(s.name); err != nil {
			return fmt.Errorf("%s: %v", from, err)
		}
		if prev, ok := seen[s.name]; ok {
			return fmt.Errorf("%s: app %q is already given by %s", from, s.name, prev)
		}
		seen[s.name] = from
		out = append(out, s)
		return nil
	}
	for _, v := range apps {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--app %q: want NAME=PATH (an app folder or a Dify DSL file)", v)
		}
		if err := add(appSpec{name: name, path: path}, "--app "+name); err != nil {
			return nil, err
		}
	}
	if appsDir != "" {
		entries, err := os.ReadDir(appsDir)
		if err != nil {
			return nil, fmt.Errorf("--apps: %v", err)
		}
		// A Dify DSL file directly in DIR is an app named after the file,
		// as teams keep the files Studio exports (docs/mock/dsl.md).
		dsls, err := appdsl.FindInDir(appsDir)
		if err != nil {
			return nil, fmt.Errorf("--apps: %v", err)
		}
		found := map[string]string{}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				found[e.Name()] = filepath.Join(appsDir, e.Name())
			}
		}
		for _, path := range dsls {
			base := filepath.Base(path)
			name := strings.TrimSuffix(base, filepath.Ext(base))
			if other, ok := found[name]; ok {
				return nil, fmt.Errorf("--apps %s: app %q is both the folder %s and the DSL file %s", appsDir, name, other, path)
			}
			found[name] = path
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("--apps %s: no apps in it (each subfolder, and each Dify DSL file, is an app)", appsDir)
		}
		names := make([]string, 0, len(found))
		for name := range found {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if err := add(appSpec{name: name, path: found[name]}, "--apps "+appsDir); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// parseAppKeys reads --app-key NAME=KEY values into keys by app name. An
// error never shows a key: it names the app, or says what is missing.
func parseAppKeys(values []string, apps []appSpec) (map[string][]string, error) {
	known := map[string]bool{}
	var names []string
	for _, a := range apps {
		known[a.name] = true
		names = append(names, a.name)
	}
	keys := map[string][]string{}
	for i, v := range values {
		name, key, ok := strings.Cut(v, "=")
		if !ok || name == "" || key == "" {
			return nil, fmt.Errorf("--app-key (value %d): want NAME=KEY", i+1)
		}
		if !known[name] {
			return nil, fmt.Errorf("--app-key for %q: no such app (apps: %s)", name, strings.Join(names, ", "))
		}
		if err := mockserver.CheckAPIKey(key); err != nil {
			return nil, fmt.Errorf("--app-key for %q: %v", name, err)
		}
		keys[name] = append(keys[name], key)
	}
	return keys, nil
}

// loadApps loads each app's cassettes and keys (flags first, then its
// keys.txt). An app given no key is reached by app-NAME when there are
// several (mockserver.DefaultAppKey), by any key when it is alone.
func loadApps(specs []appSpec, flagKeys map[string][]string, logger *slog.Logger) ([]servedApp, error) {
	var out []servedApp
	for _, s := range specs {
		set, err := loadAppSource(s.path, logger)
		if err != nil {
			return nil, fmt.Errorf("app %q: %v", s.name, err)
		}
		keys := flagKeys[s.name]
		fileKeys, err := readKeysFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("app %q: %v", s.name, err)
		}
		keys = append(keys, fileKeys...)
		out = append(out, servedApp{
			cfg:          mockserver.AppConfig{Name: s.name, Cassettes: set, CassetteDir: cassetteDir(s.path), APIKeys: keys},
			explicitKeys: len(keys) > 0,
		})
	}
	return out, nil
}

// readKeysFile reads the keys.txt of an app folder: one key a line, blank
// lines and lines starting with # ignored. None (or no folder): no keys.
func readKeysFile(dir string) ([]string, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil // a file source has no keys.txt; loadAppSource reports a missing path
	}
	path := filepath.Join(dir, keysFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The message names the line, never its contents: a key.
		if err := mockserver.CheckAPIKey(line); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n, err)
		}
		keys = append(keys, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return keys, nil
}

// cassetteDir is the folder an app's cassettes are reloaded from and saved
// into: the app folder itself (hybrid mode may create it), none for an app
// described by a DSL file alone (it replays the built-in cassettes).
func cassetteDir(path string) string {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return ""
	}
	return path
}
