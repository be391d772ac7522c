//go:build !unix

package cli

import (
	"os"
	"os/exec"
)

// ownProcessGroup does nothing where there are no process groups.
func ownProcessGroup(cmd *exec.Cmd) {}

// signalGroup stops the command's process (there is no group to signal and
// no SIGTERM: the process is killed).
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(os.Kill)
	}
}
