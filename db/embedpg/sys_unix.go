//go:build unix

package embedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const supported = true

// setCredential makes cmd run as u (nil: as the current user). The
// supplementary groups are cleared; only u's primary group is kept.
func setCredential(cmd *exec.Cmd, u *sysUser) {
	if u == nil {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid},
	}
}

// lockFile takes an exclusive flock(2) on path, polling until ctx is done.
// The returned function releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedpg: open lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("embedpg: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("embedpg: waiting for lock %s (another process is starting or stopping this cluster): %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tryLock tries to take an flock(2) on f without waiting, exclusive or
// shared; it reports false when another open file description holds a
// conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, syscall.EINTR):
			return false, err
		}
	}
}

// unlock releases an flock taken by tryLock.
func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// processAlive reports whether pid is a live (non-zombie) process that the
// postgres user could signal, mirroring PostgreSQL's own lock-file check: a
// process we may not signal (EPERM) belongs to another user and so cannot be
// our postmaster.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A killed postmaster whose parent (usually init) has not reaped it yet
	// is a zombie: kill(pid, 0) succeeds but it is dead for our purposes.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			if st := s[i+2]; st == 'Z' || st == 'X' {
				return false
			}
		}
	}
	return true
}

// processCwd returns the working directory of pid where the OS exposes it
// (Linux /proc); ok is false when it cannot be determined.
func processCwd(pid int) (string, bool) {
	d, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return "", false
	}
	return d, true
}

// fileOwner returns the numeric owner of fi.
func fileOwner(fi os.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
