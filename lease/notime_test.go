package lease_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoWallClock enforces the clock seam: this package's code never reads
// the wall clock; time reaches it through clock.Clock and the database.
func TestNoWallClock(t *testing.T) {
	t.Parallel()
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
