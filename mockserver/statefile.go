package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/store"
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

// LoadState replaces the state with the JSON export in path (the control
// API's /__mock/api/state/export format). A missing file is not an error:
// loaded is false and the state stays empty, so `serve --state-file` works
// on the first run. Anything but a regular file is refused, and at most
// maxStateFile bytes are read.
func (s *appServer) LoadState(path string) (loaded bool, err error) {
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
	var snap store.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return false, fmt.Errorf("state file %s: not a dify-mock state export: %v", path, err)
	}
	data = nil
	if err := s.store.Import(snap); err != nil {
		return false, fmt.Errorf("state file %s: %v", path, err)
	}
	return true, nil
}

// SaveState writes the whole state as JSON to path, atomically (a
// temporary file renamed into place), readable by the owner only: it holds
// the end users' conversations.
func (s *appServer) SaveState(path string) error {
	data, err := json.MarshalIndent(s.store.Export(), "", " ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// SaveStateFallback writes the state to a new file in the system's
// temporary folder, for when SaveState failed at shutdown: the state is
// not lost, and the message can say where it went.
func (s *appServer) SaveStateFallback() (string, error) {
	data, err := json.MarshalIndent(s.store.Export(), "", " ")
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
