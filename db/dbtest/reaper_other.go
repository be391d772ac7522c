//go:build !unix

package dbtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/workgraph-dev/workgraph/db/embedpg"
)

// Without flock there is no reaper: the embedded cluster (where supported)
// is left running.

func holdUsersLock(string) error { return nil }

func startReaper(string) {}

// dropDetached cannot detach a process here: Main drops the databases itself.
func dropDetached(string, []string) bool { return false }

func stopIfUnused(ctx context.Context, dir string, log *slog.Logger) error {
	return embedpg.StopRunning(ctx, embedpg.Config{DataDir: filepath.Join(dir, "pg"), Logger: log})
}

func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("dbtest: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("dbtest: %s is not a directory; remove it or set WORKGRAPH_TEST_DATABASE_URL", dir)
	}
	return nil
}
