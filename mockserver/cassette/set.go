package cassette

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// AppName is the file (without .yaml) that holds the app description.
const AppName = "app"

// MaxFileSize bounds a cassette file so a stray file cannot exhaust memory.
const MaxFileSize = 64 << 20

// Set is every cassette of one folder.
type Set struct {
	// App is the app description, nil when the folder has none (the caller
	// decides on a fallback).
	App *App
	// Cassettes by name; Names lists them sorted.
	Cassettes map[string]*Cassette
	Names     []string
	// Default is the name of the cassette marked default (or, when none is,
	// the first name in sort order).
	Default string
}

// Get returns the named chat cassette.
func (s *Set) Get(name string) (*Cassette, bool) {
	c, ok := s.Cassettes[name]
	return c, ok
}

// LoadDir loads every *.yaml file directly inside dir (subfolders such as
// scenarios/ are ignored). Dify app DSL files (IsAppDSL) are skipped:
// mockserver/internal/appdsl.Load reads a folder that holds one.
func LoadDir(dir string) (*Set, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("cassette folder: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("cassette folder %s is not a directory", dir)
	}
	return load(os.DirFS(dir), dir)
}

// LoadFS loads every *.yaml file at the root of fsys; label names the source
// in error messages (e.g. "built-in cassettes").
func LoadFS(fsys fs.FS, label string) (*Set, error) {
	return load(fsys, label)
}

func load(fsys fs.FS, label string) (*Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", label, err)
	}
	s := &Set{Cassettes: map[string]*Cassette{}}
	var defaults []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".yaml")
		display := filepath.Join(label, e.Name())
		data, err := readLimited(fsys, e.Name())
		if err != nil {
			return nil, fileErr(display, "%v", err)
		}
		if IsAppDSL(data) {
			// A Dify app DSL file is the folder's app description in
			// another format, named as Dify exports name it;
			// mockserver/internal/appdsl loads it.
			continue
		}
		if err := ValidName(name); err != nil {
			return nil, fileErr(display, "%v", err)
		}
		f, err := Decode(display, data)
		if err != nil {
			return nil, err
		}
		switch f.Meta.Kind {
		case KindApp:
			if s.App != nil {
				return nil, fileErr(display, "a second app description (first: %s)", s.App.Path)
			}
			if s.App, err = ParseApp(name, display, f); err != nil {
				return nil, err
			}
		case KindChat:
			c, err := ParseChat(name, display, f)
			if err != nil {
				return nil, err
			}
			c.Digest = sha256.Sum256(data)
			s.Cassettes[name] = c
			s.Names = append(s.Names, name)
			if c.Meta.Default {
				defaults = append(defaults, name)
			}
		default:
			return nil, fileErr(display, "dify_mock.kind must be %q or %q, got %q", KindChat, KindApp, f.Meta.Kind)
		}
	}
	sort.Strings(s.Names)
	switch {
	case len(defaults) > 1:
		sort.Strings(defaults)
		return nil, fmt.Errorf("%s: more than one cassette is marked default: %s", label, strings.Join(defaults, ", "))
	case len(defaults) == 1:
		s.Default = defaults[0]
	case len(s.Names) > 0:
		s.Default = s.Names[0]
	}
	return s, nil
}

func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte limit", st.Size(), MaxFileSize)
	}
	return fs.ReadFile(fsys, name)
}

// ErrExists is returned by WriteNew when the target cassette already exists.
var ErrExists = errors.New("cassette already exists")

// WriteNew writes data as dir/name.yaml without ever replacing an existing
// file: it writes a temporary file and hard-links it into place, so a reader
// never sees half a cassette and a concurrent writer cannot clobber one.
func WriteNew(dir, name string, data []byte) (string, error) {
	return write(dir, name, data, false)
}

// WriteReplace writes data as dir/name.yaml, atomically replacing any file
// of that name (temporary file + rename): for callers that own the file, such
// as `author --force` or a recorder rewriting its own session.
func WriteReplace(dir, name string, data []byte) (string, error) {
	return write(dir, name, data, true)
}

func write(dir, name string, data []byte, replace bool) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	target := filepath.Join(dir, name+".yaml")
	tmp, err := createTemp(dir, "."+name+".", ".tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if replace {
		return target, os.Rename(tmp.Name(), target)
	}
	if err := os.Link(tmp.Name(), target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w (choose another name or delete it first)", target, ErrExists)
		}
		return "", err
	}
	return target, nil
}

// createTemp is os.CreateTemp with mode 0644 less the process umask:
// cassettes are meant to be shared and committed, but a user who sets
// `umask 077` (a recording of a private app) gets 0600 files, which
// os.CreateTemp's fixed 0600 followed by a chmod would not honour either way.
func createTemp(dir, prefix, suffix string) (*os.File, error) {
	for range 100 {
		var r [6]byte
		_, _ = rand.Read(r[:])
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(r[:])+suffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("%s: no free temporary file name", dir)
}
