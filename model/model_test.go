package model_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestModel runs check.sh: the fenced protocol verifies and each variant
// without a guard finds its counterexample. It is skipped when spin or cc
// is missing, unless WORKGRAPH_REQUIRE_SPIN is set: `make test` (CI) sets
// it, so there the model is checked for certain, once.
func TestModel(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"spin", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WORKGRAPH_REQUIRE_SPIN") != "" {
				t.Fatalf("%s is not installed, and WORKGRAPH_REQUIRE_SPIN (make test) requires the model check", tool)
			}
			t.Skipf("%s is not installed: make test (CI) checks the model", tool)
		}
	}
	out, err := exec.Command("./check.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("check.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		"fenced: verified", "fenced-wide: verified",
		"reconcile: verified", "reconcile-wide: verified",
		"nofence: counterexample found", "nogate: counterexample found",
		"reconcile-split: counterexample found",
		"noblock: counterexample found", "reconcile-noblock: counterexample found",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check.sh output lacks %q:\n%s", want, out)
		}
	}
}
