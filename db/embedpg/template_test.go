package embedpg

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/internal/treecopy"
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
	err := treecopy.Copy(src, filepath.Join(dir, "data"), nil)
	if err != nil {
		t.Fatalf("copy the template cluster: %v", err)
	}
}
