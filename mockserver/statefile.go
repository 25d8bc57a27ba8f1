package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// maxStateFile bounds a state file read at start. The read itself stops
// there: a file's stat size is not trusted (a link to /dev/zero has none).
const maxStateFile = 1 << 30

// PrepareStateFile checks a --state-file path at start, so that a problem
// is found while it can still be fixed rather than at shutdown, when the
// state would be lost. It returns the path to use for loading and saving:
//   - a symbolic link is followed, once: load and save both use its target
//     (saving replaces the target, never the link);
//   - the target must be a regular file or absent: a directory, device,
//     FIFO or socket is refused (a FIFO would hang the start, /dev/zero
//     would be read without end);
//   - its folder must exist and be writable: a temporary file is created
//     and removed there;
//   - temporary files a killed save left behind (.NAME.*.tmp) are removed.
func PrepareStateFile(path string) (string, error) {
	if path == "" {
		return "", errors.New("no path")
	}
	resolved := path
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A dangling link: save where it points.
			link, lerr := os.Readlink(path)
			if lerr != nil {
				return "", lerr
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(path), link)
			}
			target = link
		case err != nil:
			return "", fmt.Errorf("%s: %v", path, err)
		}
		resolved = target
	}
	st, err := os.Lstat(resolved)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", err
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file (%s): give the path of a JSON file, or of one to create", resolved, kind(st.Mode()))
	}
	dir := filepath.Dir(resolved)
	probe, err := os.CreateTemp(dir, "."+filepath.Base(resolved)+".*.probe")
	if err != nil {
		return "", fmt.Errorf("the state could not be saved into %s at shutdown: %v", dir, unwrapPath(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	removeStaleTemps(resolved)
	return resolved, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// removeStaleTemps deletes the temporary files SaveState creates beside
// path (".NAME.*.tmp") that a killed process left behind.
func removeStaleTemps(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	matches, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+".*.tmp"))
	for _, m := range matches {
		if st, err := os.Lstat(m); err == nil && st.Mode().IsRegular() {
			_ = os.Remove(m)
		}
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// LoadState replaces the state with the JSON export in path: one app's
// (the control API's /__mock/api/state/export format), which goes to the
// default app, or several apps' (AppsState, which SaveState writes for a
// Server with several apps). A missing file is not an error:
// loaded is false and the state stays empty, so `serve --state-file` works
// on the first run. Anything but a regular file is refused, and at most
// maxStateFile bytes are read.
func (s *Server) LoadState(path string) (loaded bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("state file %s is not a regular file (%s)", path, kind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return false, err
	}
	if len(data) > maxStateFile {
		return false, fmt.Errorf("state file %s is over the %d-byte limit", path, maxStateFile)
	}
	if err := s.importState(data); err != nil {
		return false, fmt.Errorf("state file %s: %v", path, err)
	}
	return true, nil
}

// AppsState is the state of several apps (a state file of a Server with
// several apps, docs/mock/apps.md): each app's snapshot, in the format of
// one app's state (the control API's /__mock/api/state/export), by name.
type AppsState struct {
	// Version is AppsStateVersion.
	Version int                        `json:"version"`
	Apps    map[string]json.RawMessage `json:"apps"`
}

// AppsStateVersion is the AppsState.Version this package writes and reads.
const AppsStateVersion = 1

// exportState is the whole state as a state file holds it: one app's
// snapshot as ever, several apps' in an AppsState.
func (s *Server) exportState() ([]byte, error) {
	if len(s.apps) == 1 {
		return json.MarshalIndent(s.store.Export(), "", " ")
	}
	all := AppsState{Version: AppsStateVersion, Apps: map[string]json.RawMessage{}}
	for _, a := range s.apps {
		data, err := json.Marshal(a.store.Export())
		if err != nil {
			return nil, err
		}
		all.Apps[a.name] = data
	}
	return json.MarshalIndent(all, "", " ")
}

// importState loads a state file's contents: one app's snapshot goes to
// the default app; an AppsState's to the apps it names, all of which must
// exist. On error no app's state changed.
func (s *Server) importState(data []byte) error {
	var probe struct {
		Apps json.RawMessage `json:"apps"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return fmt.Errorf("not a dify-mock state export: %v", err)
	}
	if probe.Apps == nil {
		var snap store.Snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return fmt.Errorf("not a dify-mock state export: %v", err)
		}
		return s.store.Import(snap)
	}
	var all AppsState
	if err := json.Unmarshal(data, &all); err != nil {
		return fmt.Errorf("not a dify-mock state export: %v", err)
	}
	if all.Version != AppsStateVersion {
		return fmt.Errorf("apps state version %d is not supported (want %d)", all.Version, AppsStateVersion)
	}
	var unknown []string
	for name := range all.Apps {
		if s.byName[name] == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("no app %s in this dify-mock (apps: %s)", strings.Join(quoteAll(unknown), ", "), strings.Join(s.appNames(), ", "))
	}
	snaps := make(map[*appServer]store.Snapshot, len(all.Apps))
	for name, raw := range all.Apps {
		var snap store.Snapshot
		if err := json.Unmarshal(raw, &snap); err != nil {
			return fmt.Errorf("app %q: not a dify-mock state export: %v", name, err)
		}
		snaps[s.byName[name]] = snap
	}
	// Every app's state is checked before any is replaced: all or none.
	var commits []func()
	for _, a := range s.apps { // in order, so that errors come the same way each time
		snap, ok := snaps[a]
		if !ok {
			continue
		}
		commit, err := a.store.PrepareImport(snap)
		if err != nil {
			return fmt.Errorf("app %q: %v", a.name, err)
		}
		commits = append(commits, commit)
	}
	for _, commit := range commits {
		commit()
	}
	return nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// SaveState writes the whole state as JSON to path (one app: its
// snapshot; several: an AppsState), atomically (a
// temporary file renamed into place), readable by the owner only: it holds
// the end users' conversations.
func (s *Server) SaveState(path string) error {
	data, err := s.exportState()
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// SaveStateFallback writes the state to a new file in the system's
// temporary folder, for when SaveState failed at shutdown: the state is
// not lost, and the message can say where it went.
func (s *Server) SaveStateFallback() (string, error) {
	data, err := s.exportState()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "dify-mock-state-*.json")
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	return name, writeAtomic(name, append(data, '\n'))
}

func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
