package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/buildinfo"
)

// TestVersion: `workgraph version` and `workgraph --version` print the
// same bug-report block: version, commit, build date, toolchain.
func TestVersion(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, args ...string) string {
		var out, errb bytes.Buffer
		if code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		return out.String()
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		sub, flag := run(t, "version"), run(t, "--version")
		if sub != flag {
			t.Errorf("version = %q, --version = %q", sub, flag)
		}
		for _, part := range []string{"workgraph ", "commit:", "built:", "go:"} {
			if !strings.Contains(sub, part) {
				t.Errorf("version output %q lacks %q", sub, part)
			}
		}
	})
	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		var got buildinfo.Info
		if err := json.Unmarshal([]byte(run(t, "version", "--json")), &got); err != nil {
			t.Fatal(err)
		}
		if got != buildinfo.Get() {
			t.Errorf("got %+v, want %+v", got, buildinfo.Get())
		}
	})
}
