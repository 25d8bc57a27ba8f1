package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// maxStateFile bounds a state file read at start.
const maxStateFile = 1 << 30

// LoadState replaces the state with the JSON export in path (the control
// API's /__mock/api/state/export format). A missing file is not an error:
// loaded is false and the state stays empty, so `serve --state-file` works
// on the first run.
func (s *Server) LoadState(path string) (loaded bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.Size() > maxStateFile {
		return false, fmt.Errorf("state file %s is %d bytes, over the %d-byte limit", path, st.Size(), maxStateFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var snap store.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return false, fmt.Errorf("state file %s: not a dify-mock state export: %v", path, err)
	}
	if err := s.store.Import(snap); err != nil {
		return false, fmt.Errorf("state file %s: %v", path, err)
	}
	return true, nil
}

// SaveState writes the whole state as JSON to path, atomically (a
// temporary file renamed into place), readable by the owner only: it holds
// the end users' conversations.
func (s *Server) SaveState(path string) error {
	data, err := json.MarshalIndent(s.store.Export(), "", " ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
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
