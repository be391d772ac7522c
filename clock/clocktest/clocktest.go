// Package clocktest checks the clock seam from a domain package's own
// tests.
package clocktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NoWallClock fails t for every non-test Go file in the current directory
// (the package under test) that reads the wall clock (time.Now, time.Since,
// time.Until): time reaches domain code through clock.Clock and the
// database.
func NoWallClock(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{"time.Now(", "time.Since(", "time.Until("} {
			if strings.Contains(string(src), banned) {
				t.Errorf("%s calls %s: use the injected clock", name, banned)
			}
		}
	}
}
