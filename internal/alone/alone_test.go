package alone

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// parentEnv carries the pid of the process that runs the package's tests
// to the processes Here starts.
const parentEnv = "WORKGRAPH_TEST_ALONE_PARENT"

// TestMain records the package's process, for TestHere.
func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) == "" {
		os.Setenv(parentEnv, strconv.Itoa(os.Getpid()))
	}
	os.Exit(m.Run())
}

// TestHere: a test run through Here goes on in another process than the
// package's (its pid differs), with the environment that names it, run
// for that test alone (-test.run matches its name and no other).
func TestHere(t *testing.T) {
	if !Here(t) {
		return
	}
	if os.Getenv(env) != t.Name() {
		t.Fatalf("%s = %q in the test's process", env, os.Getenv(env))
	}
	if parent := os.Getenv(parentEnv); parent == "" || parent == strconv.Itoa(os.Getpid()) {
		t.Fatalf("the test goes on in the package's process (pid %d, the package's %q)", os.Getpid(), parent)
	}
	if run := flag.Lookup("test.run").Value.String(); run != "^TestHere$" {
		t.Fatalf("the process runs -test.run=%q, not this test alone", run)
	}
}

// TestOutcome: the verdict is read from the output of the test's process;
// a failed process, or one that printed no verdict of the test (it ran no
// test: a name that matched none), is an error.
func TestOutcome(t *testing.T) {
	t.Parallel()
	exitErr := exec.Command("false").Run()
	for _, tc := range []struct {
		name, out string
		err       error
		want      string
		wantErr   bool
	}{
		{"OK", "=== RUN   TestX\n--- PASS: TestX (0.01s)\nPASS\n", nil, "PASS", false},
		{"OKSkipped", "=== RUN   TestX\n--- SKIP: TestX (0.00s)\nPASS\n", nil, "SKIP", false},
		{"ErrFailed", "=== RUN   TestX\n--- FAIL: TestX (0.01s)\nFAIL\n", exitErr, "", true},
		{"ErrNoTestRan", "testing: warning: no tests to run\nPASS\n", nil, "", true},
		{"ErrOtherTestPassed", "=== RUN   TestXY\n--- PASS: TestXY (0.01s)\nPASS\n", nil, "", true},
		{"ErrNotRun", "", errors.New("exec: not found"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := outcome("TestX", tc.out, tc.err)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("outcome = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
