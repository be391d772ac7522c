//go:build unix

package dbtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/embedpg"
)

// The embedded test cluster is shared by the test binaries of one `go test`
// run (and of runs that overlap). Each holds a shared flock on
// <testDir>/users.lock from before it starts or reuses the cluster until it
// exits (the kernel drops the lock with the process, however it ends). The
// binary that started the cluster also starts the reaper: the same test
// binary run again with reaperEnv set, which does nothing but wait until it
// can take the lock exclusively for reaperIdle without interruption, then
// stops the cluster while holding it, and exits. A test binary arriving
// meanwhile waits for the stop, then starts the cluster again (a restart
// takes well under a second; the data and the template database are kept).

const (
	reaperEnv = "WORKGRAPH_DBTEST_REAPER"
	// reaperIdle outlasts most gaps between test binaries while `go test`
	// compiles the next package on a loaded machine.
	reaperIdle = 30 * time.Second
)

// usersLock is this process's shared lock. Kept referenced so that the
// *os.File finalizer never closes it (which would drop the lock) before the
// process exits.
var usersLock *os.File

func init() {
	// In the reaper process, do its job and exit before any test runs.
	if dir := os.Getenv(reaperEnv); dir != "" {
		os.Exit(reap(dir))
	}
	// In a dropper (dropDetached), likewise.
	if base := os.Getenv(dropEnv); base != "" {
		names := strings.Split(os.Getenv(dropNamesEnv), ",")
		os.Unsetenv(dropEnv)
		os.Unsetenv(dropNamesEnv)
		dropInTurn(base, names)
		os.Exit(0)
	}
}

// The dropper: the test binary run again with dropEnv (the server's URL)
// and dropNamesEnv (the databases, comma-separated) set, in a session of
// its own and without stdio, so `go test` does not wait for it. It drops
// the databases (dropInTurn) and exits. Each DROP
// DATABASE waits for an immediate checkpoint of the whole server, which
// on the shared development server took up to 14 s (fsyncs of the files
// of every database created since the last one); the binary need not wait
// for it, because nothing it does depends on the drop. While the test
// cluster is embedded, the dropper inherits this process's shared lock on
// users.lock, so the reaper does not stop the cluster under it.
const (
	dropEnv      = "WORKGRAPH_DBTEST_DROP"
	dropNamesEnv = "WORKGRAPH_DBTEST_DROP_NAMES"
)

// dropInTurn is the dropper's work. The droppers of a run take turns (an
// exclusive flock on <testDir>/drop.lock, waited for before connecting),
// so that at most one holds connections at a time, each dropping its
// binary's databases at once (dropDatabases: their drops share one or two
// checkpoints): the shared server's max_connections is the suite's bound,
// and droppers that overlapped each other and the next binaries' tests got
// tests refused "too many clients". A drop that failed (the server busy)
// is tried again, for up to a minute: nobody waits for the dropper.
func dropInTurn(base string, names []string) {
	if dir, err := testDir(); err == nil {
		if f, err := os.OpenFile(filepath.Join(dir, "drop.lock"), os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			defer f.Close()
			if flock(f, syscall.LOCK_EX) == nil {
				defer flock(f, syscall.LOCK_UN)
			}
		}
	}
	for try := 0; len(names) > 0 && try < 30; try++ {
		if try > 0 {
			time.Sleep(2 * time.Second)
		}
		dropDatabases(base, names)
		names = existing(base, names)
	}
}

// existing returns those of names that are databases on the server at
// base (all of them when it cannot tell).
func existing(base string, names []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return names
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT datname FROM pg_database WHERE datname = ANY($1)", names)
	if err != nil {
		return names
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return names
	}
	return left
}

// dropDetached starts a dropper for names on the server at base and
// reports whether it did (if not, the caller drops them itself).
func dropDetached(base string, names []string) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), dropEnv+"="+base, dropNamesEnv+"="+strings.Join(names, ","))
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if usersLock != nil {
		cmd.ExtraFiles = []*os.File{usersLock} // the same open file: the same flock
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	cmd.Process.Release()
	return true
}

func openUsersLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "users.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dbtest: %w", err)
	}
	return f, nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// holdUsersLock takes the shared lock for the rest of this process's life,
// waiting while the reaper stops the cluster.
func holdUsersLock(dir string) error {
	f, err := openUsersLock(dir)
	if err != nil {
		return err
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("dbtest: lock %s: %w", f.Name(), err)
	}
	usersLock = f
	return nil
}

// startReaper starts the reaper for the cluster this process just started.
// If it cannot, the cluster is left running (StopEmbedded stops it).
func startReaper(dir string) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+dir)
	cmd.Dir = "/"
	// Its own session, no stdio: `go test` does not wait for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		cmd.Process.Release()
	}
}

// reap is the reaper's main: see the comment at the top of this file.
func reap(dir string) int {
	os.Unsetenv(reaperEnv) // not for pg_ctl and the server it runs
	var out io.Writer = io.Discard
	if f, err := os.OpenFile(filepath.Join(dir, "reaper.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		defer f.Close()
		out = f
	}
	log := slog.New(slog.NewTextHandler(out, nil)).With("reaper_pid", os.Getpid())
	f, err := openUsersLock(dir)
	if err != nil {
		log.Error("reaper", "err", err)
		return 1
	}
	defer f.Close()
	log.Info("reaper waiting for the test binaries to finish")
	var idleSince time.Time
	for {
		time.Sleep(time.Second)
		if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			idleSince = time.Time{} // in use
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < reaperIdle {
			flock(f, syscall.LOCK_UN)
			continue
		}
		err := embedpg.StopRunning(context.Background(), embedpg.Config{DataDir: filepath.Join(dir, "pg"), Logger: log})
		flock(f, syscall.LOCK_UN)
		if err != nil {
			log.Error("reaper: stopping the test cluster", "err", err)
			return 1
		}
		log.Info("reaper done")
		return 0
	}
}

// stopIfUnused stops the cluster unless a test binary holds the lock.
func stopIfUnused(ctx context.Context, dir string, log *slog.Logger) error {
	f, err := openUsersLock(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.New("dbtest: the embedded test cluster is in use by running tests; not stopping it")
	}
	defer flock(f, syscall.LOCK_UN)
	return embedpg.StopRunning(ctx, embedpg.Config{DataDir: filepath.Join(dir, "pg"), Logger: log})
}

// checkOwnDir refuses a test directory that is a symlink, not a directory,
// or owned by another user (the temp dir is shared).
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("dbtest: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || (ok && int(st.Uid) != os.Getuid()) {
		return fmt.Errorf("dbtest: %s is not a directory owned by uid %d; remove it or set WORKGRAPH_TEST_DATABASE_URL", dir, os.Getuid())
	}
	return nil
}
