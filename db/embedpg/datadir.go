package embedpg

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDataDir returns the directory a cluster lives in when
// Config.DataDir is empty:
//
//   - $WORKGRAPH_DATA_DIR if it is set (as `workgraph serve --data-dir`
//     takes it);
//   - otherwise, when running as root, /var/lib/workgraph/pg (the postgres
//     user the server runs as cannot enter /root, so a home-based default
//     would not work);
//   - otherwise $XDG_DATA_HOME/workgraph/pg if XDG_DATA_HOME is an absolute
//     path;
//   - otherwise ~/.local/share/workgraph/pg;
//   - and, if the home directory is unknown, $TMPDIR/workgraph-<uid>/pg.
//
// It does not create the directory.
func DefaultDataDir() string {
	home, _ := os.UserHomeDir()
	return defaultDataDir(os.Getenv, os.Geteuid(), home)
}

func defaultDataDir(getenv func(string) string, euid int, home string) string {
	if d := getenv(EnvDataDir); d != "" {
		return d
	}
	if euid == 0 {
		return "/var/lib/workgraph/pg"
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "workgraph", "pg")
	}
	if home != "" {
		return filepath.Join(home, ".local", "share", "workgraph", "pg")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-%d", euid), "pg")
}
