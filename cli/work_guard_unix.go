//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// guardArg is the first argument that makes the workgraph binary run as
// the guard of a supervised command (see commandFor) instead of as the
// command line. It is not a command of the command line: Main takes it
// before parsing anything.
const guardArg = "__work-guard"

// guardPoll is how often the guard looks whether its supervisor is gone.
const guardPoll = 200 * time.Millisecond

// commandFor returns the process `work` starts for argv: the workgraph
// binary itself as a guard (runGuard) that runs argv in its own process
// group and stops that group when the supervisor dies. Without it, a
// supervisor killed outright (kill -9, the OOM killer) left the command
// running, unsupervised, on an item whose lease then expired and went to
// another worker. The guard is as transparent as it can be: the command
// has the guard's standard streams, environment and directory, its
// exit status is the guard's (a command killed by a signal kills the
// guard with the same signal), and the supervisor's SIGTERM and SIGKILL
// to the group reach the command as before. A command that cannot be
// found is refused here, before anything starts.
func commandFor(argv []string, grace time.Duration) (*exec.Cmd, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, err
	}
	self, ok := selfBinary()
	if !ok {
		return exec.Command(argv[0], argv[1:]...), nil
	}
	args := append([]string{guardArg, strconv.Itoa(os.Getpid()), grace.String(), "--"}, argv...)
	return exec.Command(self, args...), nil
}

// selfBinary returns a path that runs this very binary: on Linux
// /proc/self/exe, which still does after the file was replaced on disk (an
// upgrade under a long `work --loop`; os.Executable then names a path
// that is gone or holds another version), else os.Executable. Without
// either the command runs unguarded.
func selfBinary() (string, bool) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", true
	}
	self, err := os.Executable()
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(self); err != nil {
		return "", false
	}
	return self, true
}

// runGuard is the guard's whole life (args: the supervisor's pid, the
// grace period, "--", the command). It starts the command in its own
// process group (the one `work` made for the guard), waits for it, and
// exits as it did. The signals the supervisor sends to the group reach the
// command directly; the guard only notes them (it must outlive the
// command to report its status). When its parent is no longer the
// supervisor (the supervisor died and the guard was handed to another
// parent) it stops the group: SIGTERM, then SIGKILL after the grace
// period, which ends the guard too.
func runGuard(args []string, stderr *os.File) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(stderr, "workgraph: the work guard is started by `workgraph work`, not by hand")
		return ExitUsage
	}
	parent, err := strconv.Atoi(args[0])
	grace, gerr := time.ParseDuration(args[1])
	if err != nil || gerr != nil {
		fmt.Fprintln(stderr, "workgraph: the work guard is started by `workgraph work`, not by hand")
		return ExitUsage
	}
	// Noted, not ignored: an ignored signal would stay ignored in the
	// command, whose SIGTERM must stop it.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)

	argv := args[3:]
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "workgraph work: cannot start %s: %v\n", argv[0], err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(guardPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return exitAs(cmd, err)
		case <-sigs:
		case <-tick.C:
			if os.Getppid() != parent {
				return orphaned(done, cmd, grace)
			}
		}
	}
}

// orphaned stops the guard's process group once its supervisor is gone.
func orphaned(done <-chan error, cmd *exec.Cmd, grace time.Duration) int {
	group := syscall.Getpgrp()
	_ = syscall.Kill(-group, syscall.SIGTERM)
	select {
	case err := <-done:
		// What the command left behind in the group goes too.
		_ = syscall.Kill(-group, syscall.SIGKILL)
		return exitAs(cmd, err)
	case <-time.After(grace):
	}
	_ = syscall.Kill(-group, syscall.SIGKILL) // the guard included
	return exitAs(cmd, <-done)
}

// exitAs ends the guard as the command ended: with its exit code, or
// killed by the signal that killed it.
func exitAs(cmd *exec.Cmd, err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return ExitError
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // the signal ends the process meanwhile
		return 128 + int(sig)
	}
	return ee.ExitCode()
}
