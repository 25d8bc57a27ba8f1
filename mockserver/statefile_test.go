package mockserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestPrepareStateFile: the --state-file surprises are found at start.
func TestPrepareStateFile(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing-folder", func(t *testing.T) {
		_, err := mockserver.PrepareStateFile(filepath.Join(dir, "nope", "state.json"))
		if err == nil || !strings.Contains(err.Error(), "could not be saved") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("read-only-folder", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only folders; the missing-folder case covers the probe")
		}
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		if _, err := mockserver.PrepareStateFile(filepath.Join(ro, "state.json")); err == nil {
			t.Fatal("a read-only folder was accepted")
		}
	})
	t.Run("not-regular", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip(err)
		}
		zero := filepath.Join(dir, "zero.json")
		if err := os.Symlink("/dev/zero", zero); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{fifo, zero, dir} {
			done := make(chan error, 1)
			go func() { _, err := mockserver.PrepareStateFile(p); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("%s: err = %v", p, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the check hung", p)
			}
			// LoadState refuses them too, without reading.
			srv, err := mockserver.New(mockserver.Config{})
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, err := srv.LoadState(p); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("LoadState(%s) accepted it", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("LoadState(%s) hung", p)
			}
		}
	})
	t.Run("symlink-is-followed-on-save", func(t *testing.T) {
		real := filepath.Join(dir, "real.json")
		link := filepath.Join(dir, "link.json")
		if err := os.Symlink("real.json", link); err != nil {
			t.Fatal(err)
		}
		got, err := mockserver.PrepareStateFile(link)
		if err != nil || got != real {
			t.Fatalf("PrepareStateFile(link) = %q, %v; want %q", got, err, real)
		}
		srv, err := mockserver.New(mockserver.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.SaveState(got); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", st.Mode(), err)
		}
		if _, err := os.Stat(real); err != nil {
			t.Errorf("the target was not written: %v", err)
		}
	})
	t.Run("stale-temp-files", func(t *testing.T) {
		p := filepath.Join(dir, "state.json")
		stale := filepath.Join(dir, ".state.json.12345.tmp")
		other := filepath.Join(dir, ".other.json.1.tmp")
		for _, f := range []string{stale, other} {
			if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mockserver.PrepareStateFile(p); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stale); err == nil {
			t.Error("the stale temporary file is still there")
		}
		if _, err := os.Stat(other); err != nil {
			t.Error("another file's temporary file was removed")
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".probe") {
				t.Errorf("the probe %s was left behind", e.Name())
			}
		}
	})
}
