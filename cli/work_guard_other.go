//go:build !unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// guardArg: there is no guard where there are no process groups (see the
// unix version); Main refuses the argument.
const guardArg = "__work-guard"

// commandFor returns the command itself: without process groups there is
// nothing for a guard to stop.
func commandFor(argv []string, _ time.Duration) (*exec.Cmd, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, err
	}
	return exec.Command(argv[0], argv[1:]...), nil
}

func runGuard(_ []string, stderr *os.File) int {
	fmt.Fprintln(stderr, "workgraph: the work guard runs only on unix")
	return ExitUsage
}
