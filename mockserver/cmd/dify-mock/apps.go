package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// Several apps in one serve (docs/mock/apps.md): --app NAME=PATH,
// --apps DIR, --app-key NAME=KEY (or DIFY_MOCK_APP_KEYS) and a keys.txt
// in an app folder.

// appKeysEnv holds --app-key values, comma-separated NAME=KEY pairs;
// appUpstreamKeysEnv the --app-upstream-key ones.
const (
	appKeysEnv         = "DIFY_MOCK_APP_KEYS"
	appUpstreamKeysEnv = "DIFY_MOCK_APP_UPSTREAM_KEYS"
)

// keysFile is the file of an app folder that lists the app's API keys.
const keysFile = "keys.txt"

// appSpec is one app named on the command line, before it is loaded.
type appSpec struct {
	name, path string
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

// parseAppKeys reads --app-key NAME=KEY values into keys by app name.
func parseAppKeys(values []string, apps []appSpec) (map[string][]string, error) {
	return parseNamedKeys("--app-key", values, apps)
}

// parseNamedKeys reads a flag's NAME=KEY values into keys by app name. An
// error never shows a key: it names the app, or says what is missing.
func parseNamedKeys(flag string, values []string, apps []appSpec) (map[string][]string, error) {
	keys := map[string][]string{}
	for i, v := range values {
		name, key, ok := strings.Cut(v, "=")
		if !ok || name == "" || key == "" {
			return nil, fmt.Errorf("%s (value %d): want NAME=KEY", flag, i+1)
		}
		if err := knownApp(flag, name, apps); err != nil {
			return nil, err
		}
		if err := mockserver.CheckAPIKey(key); err != nil {
			return nil, fmt.Errorf("%s for %q: %v", flag, name, err)
		}
		keys[name] = append(keys[name], key)
	}
	return keys, nil
}

// knownApp refuses a flag's app name that no --app/--apps gave, naming
// the apps.
func knownApp(flag, name string, apps []appSpec) error {
	names := make([]string, len(apps))
	for i, a := range apps {
		if a.name == name {
			return nil
		}
		names[i] = a.name
	}
	return fmt.Errorf("%s for %q: no such app (apps: %s)", flag, name, strings.Join(names, ", "))
}

// appUpstream is an app's hybrid mode: its upstream and key.
type appUpstream struct{ url, key string }

// parseAppUpstreams reads --app-upstream NAME=URL and the apps' upstream
// keys (--app-upstream-key or DIFY_MOCK_APP_UPSTREAM_KEYS): one each.
func parseAppUpstreams(values, keyValues []string, apps []appSpec) (map[string]appUpstream, error) {
	keys, err := parseNamedKeys("--app-upstream-key", keyValues, apps)
	if err != nil {
		return nil, err
	}
	urls := map[string][]string{}
	for _, v := range values {
		name, url, ok := strings.Cut(v, "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("--app-upstream %q: want NAME=URL", v)
		}
		if err := knownApp("--app-upstream", name, apps); err != nil {
			return nil, err
		}
		urls[name] = append(urls[name], url)
	}
	out := map[string]appUpstream{}
	for _, a := range apps { // in the apps' order: the same error first each time
		name, us := a.name, urls[a.name]
		switch {
		case len(us) == 0:
			if len(keys[name]) > 0 {
				return nil, fmt.Errorf("--app-upstream-key for %q: the app has no --app-upstream", name)
			}
			continue
		case len(us) > 1:
			return nil, fmt.Errorf("--app-upstream for %q is given %d times: an app has one upstream", name, len(us))
		case len(keys[name]) == 0:
			return nil, fmt.Errorf("--app-upstream for %q needs the app's upstream key: set %s=%s=KEY (or pass --app-upstream-key)", name, appUpstreamKeysEnv, name)
		case len(keys[name]) > 1:
			return nil, fmt.Errorf("--app-upstream-key for %q is given %d times: an app has one upstream key", name, len(keys[name]))
		}
		out[name] = appUpstream{url: us[0], key: keys[name][0]}
	}
	return out, nil
}

// appKeys are each app's keys: its --app-key ones, then its keys.txt's.
// An app with none is reached by app-NAME when there are several
// (mockserver.DefaultAppKey), by any key when it is alone.
func appKeys(specs []appSpec, flagKeys map[string][]string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, s := range specs {
		fileKeys, err := readKeysFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("app %q: %v", s.name, err)
		}
		if keys := append(slices.Clone(flagKeys[s.name]), fileKeys...); len(keys) > 0 {
			out[s.name] = keys
		}
	}
	return out, nil
}

// loadApps loads each app's cassettes into its configuration, with its
// keys and its upstream (hybrid mode), if any.
func loadApps(specs []appSpec, keys map[string][]string, upstreams map[string]*record.Recorder, logger *slog.Logger) ([]mockserver.AppConfig, error) {
	var out []mockserver.AppConfig
	for _, s := range specs {
		set, err := loadAppSource(s.path, logger)
		if err != nil {
			return nil, fmt.Errorf("app %q: %v", s.name, err)
		}
		out = append(out, mockserver.AppConfig{Name: s.name, Cassettes: set, CassetteDir: cassetteDir(s.path), APIKeys: keys[s.name],
			Upstream: upstreams[s.name]})
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
