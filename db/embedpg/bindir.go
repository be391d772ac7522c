package embedpg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Environment variables consulted by this package.
const (
	// EnvDataDir overrides the default data directory: DefaultDataDir
	// returns $WORKGRAPH_DATA_DIR when it is set.
	EnvDataDir = "WORKGRAPH_DATA_DIR"
	// EnvBinDir names the directory holding initdb and pg_ctl; it is the
	// first place FindBinDir looks.
	EnvBinDir = "WORKGRAPH_PG_BINDIR"
)

// binSearch holds everything FindBinDir depends on, so tests can make the
// search fail (or succeed) deterministically.
type binSearch struct {
	getenv    func(string) string
	libRoot   string   // directory whose */bin subdirectories are versioned installs
	extraDirs []string // last-resort directories
}

func defaultBinSearch() binSearch {
	return binSearch{
		getenv:    os.Getenv,
		libRoot:   "/usr/lib/postgresql",
		extraDirs: []string{"/usr/local/pgsql/bin"},
	}
}

// FindBinDir returns the directory holding the PostgreSQL server binaries
// initdb and pg_ctl (pg_ctl in turn runs the postgres binary next to it).
//
// The search order is:
//  1. $WORKGRAPH_PG_BINDIR;
//  2. the first PATH directory containing both initdb and pg_ctl (symlinks are
//     resolved when the target directory also holds pg_ctl);
//  3. `pg_config --bindir`, with pg_config looked up in PATH;
//  4. /usr/lib/postgresql/*/bin, highest version first (Debian/Ubuntu layout);
//  5. /usr/local/pgsql/bin (source-build default).
//
// A candidate is accepted only if both initdb and pg_ctl are executable files
// in it. If none is, the error lists what was searched and says how to fix
// it (install the server package, set WORKGRAPH_PG_BINDIR, or point
// WORKGRAPH_DATABASE_URL at an existing server).
func FindBinDir() (string, error) {
	return defaultBinSearch().find()
}

func (s binSearch) find() (string, error) {
	var searched []string

	if d := s.getenv(EnvBinDir); d != "" {
		if hasServerBins(d) {
			return filepath.Clean(d), nil
		}
		searched = append(searched, fmt.Sprintf("$%s=%s (no initdb/pg_ctl there)", EnvBinDir, d))
	} else {
		searched = append(searched, "$"+EnvBinDir+" (unset)")
	}

	pathList := s.getenv("PATH")
	if d := findInPath(pathList); d != "" {
		return d, nil
	}
	searched = append(searched, "PATH")

	if pgConfig := lookPathIn("pg_config", pathList); pgConfig != "" {
		if d := pgConfigBinDir(pgConfig); d != "" && hasServerBins(d) {
			return d, nil
		}
		searched = append(searched, pgConfig+" --bindir")
	} else {
		searched = append(searched, "pg_config (not in PATH)")
	}

	if s.libRoot != "" {
		for _, d := range versionedBinDirs(s.libRoot) {
			if hasServerBins(d) {
				return d, nil
			}
		}
		searched = append(searched, filepath.Join(s.libRoot, "*", "bin"))
	}

	for _, d := range s.extraDirs {
		if hasServerBins(d) {
			return d, nil
		}
		searched = append(searched, d)
	}

	return "", fmt.Errorf("embedpg: no PostgreSQL server binaries (initdb, pg_ctl) found (searched %s); "+
		"install them (Debian/Ubuntu: apt-get install postgresql) or set %s to their directory, "+
		"or set WORKGRAPH_DATABASE_URL to an existing server",
		strings.Join(searched, ", "), EnvBinDir)
}

// hasServerBins reports whether dir holds executable initdb and pg_ctl.
func hasServerBins(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "pg_ctl"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// findInPath returns the first directory of pathList holding both initdb and
// pg_ctl. If initdb is a symlink into a directory that also has pg_ctl (as on
// systems linking /usr/local/bin/initdb to /usr/lib/postgresql/N/bin), the
// resolved directory is returned.
func findInPath(pathList string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // relative PATH entries are a security hazard; ignore
		}
		if !hasServerBins(dir) {
			continue
		}
		if real, err := filepath.EvalSymlinks(filepath.Join(dir, "initdb")); err == nil {
			if rd := filepath.Dir(real); hasServerBins(rd) {
				return rd
			}
		}
		return filepath.Clean(dir)
	}
	return ""
}

// lookPathIn is exec.LookPath over an explicit PATH value.
func lookPathIn(name, pathList string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

func pgConfigBinDir(pgConfig string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output()
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
}

// versionedBinDirs returns root/*/bin, highest version first ("16" before
// "15" before "9.6"; non-numeric names last, alphabetically).
func versionedBinDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Slice(names, func(i, j int) bool {
		vi, oki := parseVersion(names[i])
		vj, okj := parseVersion(names[j])
		switch {
		case oki && okj:
			for k := 0; k < len(vi) || k < len(vj); k++ {
				var a, b int
				if k < len(vi) {
					a = vi[k]
				}
				if k < len(vj) {
					b = vj[k]
				}
				if a != b {
					return a > b
				}
			}
			return names[i] < names[j]
		case oki != okj:
			return oki
		default:
			return names[i] < names[j]
		}
	})
	dirs := make([]string, 0, len(names))
	for _, n := range names {
		dirs = append(dirs, filepath.Join(root, n, "bin"))
	}
	return dirs
}

// parseVersion parses "15" or "9.6" into its numeric components.
func parseVersion(s string) ([]int, bool) {
	var v []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		v = append(v, n)
	}
	return v, len(v) > 0
}

// majorVersion reduces a PostgreSQL version string to its major version as
// written in PG_VERSION: "15.14" -> "15", "9.6.24" -> "9.6".
func majorVersion(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) >= 2 && parts[0] == "9" {
		return parts[0] + "." + parts[1]
	}
	return parts[0]
}

// binVersion returns the major version of the binaries in binDir, from
// `pg_ctl --version` ("pg_ctl (PostgreSQL) 15.14 (Debian ...)").
func binVersion(ctx context.Context, binDir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "pg_ctl"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("embedpg: %s --version: %w", filepath.Join(binDir, "pg_ctl"), err)
	}
	s := string(out)
	if i := strings.Index(s, ")"); i >= 0 {
		s = s[i+1:]
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "", fmt.Errorf("embedpg: cannot parse pg_ctl --version output %q", out)
	}
	// Versions like "16beta1" or "15devel": keep the leading digits and dots.
	v := fields[0]
	if end := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); end >= 0 {
		v = v[:end]
	}
	if v == "" {
		return "", fmt.Errorf("embedpg: cannot parse pg_ctl --version output %q", out)
	}
	return majorVersion(v), nil
}
