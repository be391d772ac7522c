package embedpg

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// template is one cluster's data directory made by initdb once per test
// binary, never started. A test whose subject is not initdb (a crash, a
// stale postmaster.pid, a failed start, ownership) starts from a copy of
// it (clusterDir) instead of running initdb itself: initdb is most of what
// a fresh cluster costs. The tests of initdb and of a first Start on an
// empty directory (TestStartStopRestartKeepsData, TestReuseRunningServer,
// TestConcurrentStart) keep their own.
var template struct {
	once sync.Once
	dir  string // the template cluster's DataDir; its data is dir/data
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if template.dir != "" {
		os.RemoveAll(template.dir)
	}
	os.Exit(code)
}

// makeTemplate runs initdb, as Start would on an empty DataDir, into a new
// directory.
func makeTemplate() (string, error) {
	base := ""
	if os.Geteuid() == 0 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "embedpg-template-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := newCluster(Config{DataDir: dir, Fast: true})
	if err != nil {
		return dir, err
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = lookupOrCreateUser(ctx, serverUser, func(string, ...any) {}); err != nil {
			return dir, err
		}
	}
	if err := c.makeDataDir(); err != nil {
		return dir, err
	}
	if err := c.prepareDirs(); err != nil {
		return dir, err
	}
	return dir, c.initIfNeeded(ctx)
}

// clusterDir returns a fresh directory for a cluster (testDataDir) that
// holds a copy of the template's initdb'd data: Start finds a cluster made
// and not running, and starts it without initdb.
func clusterDir(t *testing.T) string {
	t.Helper()
	dir := testDataDir(t)
	copyTemplate(t, dir)
	return dir
}

// copyTemplate copies the template's data into dir/data, keeping modes
// and, as root, owners (the postgres user's).
func copyTemplate(t *testing.T, dir string) {
	t.Helper()
	requireBins(t)
	template.once.Do(func() { template.dir, template.err = makeTemplate() })
	if template.err != nil {
		t.Fatalf("template cluster: %v", template.err)
	}
	src := filepath.Join(template.dir, "data")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, "data", rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(to, info.Mode().Perm())
		case info.Mode().IsRegular():
			err = copyFile(p, to, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: neither a directory nor a regular file", p)
		}
		if uid, gid, ok := fileOwner(info); err == nil && ok && os.Geteuid() == 0 {
			err = os.Lchown(to, int(uid), int(gid))
		}
		return err
	})
	if err != nil {
		t.Fatalf("copy the template cluster: %v", err)
	}
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
