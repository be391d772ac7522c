// Package testbin builds a main package of this module for tests that run
// it as a process (the CLI end-to-end tests, the fenced counter example).
//
// A test binary that builds into a fresh temporary directory relinks the
// program on every run, seconds of CPU each. Build instead writes into a
// directory of this user's cache, one per test package directory and
// program, where `go build` finds the binary of the previous run and
// relinks nothing when it is up to date (it compares the binary's build
// ID with the one it would build); a changed source is rebuilt as ever.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
)

// Build builds the main package pkg (an import path) and returns the path
// of the binary. Call it once per test binary (TestMain, or a sync.Once):
// a test binary must not rebuild a program another of its tests runs.
func Build(pkg string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	// One directory per worktree's package and program: two worktrees
	// (or branches) never overwrite each other's binary.
	key := sha256.Sum256([]byte(wd + "\x00" + pkg))
	dir := filepath.Join(cache, "workgraph-testbin", hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	bin := filepath.Join(dir, path.Base(pkg))
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: building %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}
