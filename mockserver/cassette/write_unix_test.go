//go:build unix

package cassette

import (
	"os"
	"syscall"
	"testing"
)

// Written cassettes honour the umask: 0644 under umask 022, 0600 under
// umask 077 (a recording of a private app); before, every file was chmod-ed
// to 0644 whatever the umask said.
func TestWriteHonoursUmask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o027, 0o640}} {
		old := syscall.Umask(c.umask)
		path, err := WriteNew(dir, "mode-"+c.want.String()[1:], []byte("x: 1\n"))
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.want {
			t.Errorf("umask %03o: mode %v, want %v", c.umask, st.Mode().Perm(), c.want)
		}
	}
}
