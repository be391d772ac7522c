package treecopy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/workgraph-dev/workgraph/internal/treecopy"
)

// TestCopy: directories and files are copied with their modes; a path keep
// refuses is left out, its directory whole; a symbolic link is refused.
func TestCopy(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "data", "base"), 0o700))
	must(os.WriteFile(filepath.Join(src, "data", "base", "1"), []byte("one"), 0o600))
	must(os.WriteFile(filepath.Join(src, "data", "PG_VERSION"), []byte("15"), 0o640))
	must(os.MkdirAll(filepath.Join(src, "run"), 0o755))
	must(os.WriteFile(filepath.Join(src, "run", "lock"), []byte("x"), 0o600))

	dst := filepath.Join(t.TempDir(), "copy")
	keep := func(rel string) bool { return rel == "data" || filepath.Dir(rel) != "." }
	must(treecopy.Copy(src, dst, keep))
	for path, mode := range map[string]os.FileMode{"data": 0o700, "data/base": 0o700, "data/base/1": 0o600, "data/PG_VERSION": 0o640} {
		fi, err := os.Stat(filepath.Join(dst, path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if fi.Mode().Perm() != mode {
			t.Fatalf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "data", "base", "1")); err != nil || string(b) != "one" {
		t.Fatalf("copied file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "run")); !os.IsNotExist(err) {
		t.Fatalf("a directory keep refused was copied: %v", err)
	}

	must(os.Symlink("PG_VERSION", filepath.Join(src, "data", "link")))
	if err := treecopy.Copy(src, filepath.Join(t.TempDir(), "again"), nil); err == nil {
		t.Fatal("a symbolic link was copied without an error")
	}
}
