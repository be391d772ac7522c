// Package alone runs a test in a process of its own, so that it can run
// beside its package's other tests and still be alone in its process: a
// test that measures what the process allocates (runtime.MemStats counts
// every goroutine of the process) without holding up the package's
// parallel tests.
//
// A test that is not parallel runs alone, but every parallel test of its
// package waits until it has ended: the memory-budget tests of lease,
// graph, attention and events, which write 120 MiB of large rows before
// they measure one read, held their packages' other tests for 30 to 100 s
// in runs of the suite on the loaded development machine.
package alone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// env names the test that a process started by Here is to run.
const env = "WORKGRAPH_TEST_ALONE"

// Here reports whether the calling top-level test runs here, alone in a
// process of its own: in the test binary run again by Here for that test
// and no other (-test.run=^Name$), where it returns true and the test goes
// on. In the process that runs the package's tests it marks the test
// parallel, runs the binary again for it, waits for it, logs what it
// printed, fails the test if it did not pass (skips it if it skipped),
// and returns false: the caller returns at once.
//
//	if !alone.Here(t) {
//		return
//	}
//
// The process is the same test binary with the same environment and
// working directory, so its TestMain (dbtest.Main) and setup are the
// test's own.
func Here(t *testing.T) bool {
	t.Helper()
	name := t.Name()
	if strings.Contains(name, "/") {
		t.Fatalf("alone: %s is a subtest; Here runs top-level tests", name)
	}
	if os.Getenv(env) == name {
		return true
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("alone: %v", err)
	}
	ctx := context.Background()
	args := []string{"-test.run=^" + regexp.QuoteMeta(name) + "$", "-test.count=1", "-test.v"}
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		args = append(args, "-test.timeout="+time.Until(deadline).Round(time.Second).String())
	}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env+"="+name)
	out, err := cmd.CombinedOutput()
	verdict, err := outcome(name, string(out), err)
	t.Logf("%s ran in a process of its own:\n%s", name, out)
	switch {
	case err != nil:
		t.Fatal(err)
	case verdict == "SKIP":
		t.Skip("skipped in its process (above)")
	}
	return false
}

// outcome reads the verdict of test name ("PASS" or "SKIP") from the
// -test.v output of its process, which exited with runErr: an error when
// the process failed, or printed no verdict of that test (a test binary
// that runs no test passes).
func outcome(name, out string, runErr error) (string, error) {
	if runErr != nil {
		var exit *exec.ExitError
		if errors.As(runErr, &exit) {
			return "", fmt.Errorf("alone: %s failed in its process (%v)", name, runErr)
		}
		return "", fmt.Errorf("alone: running %s in a process of its own: %v", name, runErr)
	}
	for _, v := range []string{"PASS", "SKIP"} {
		if strings.Contains(out, "--- "+v+": "+name+" (") {
			return v, nil
		}
	}
	return "", fmt.Errorf("alone: the process run for %s did not say that it passed", name)
}
