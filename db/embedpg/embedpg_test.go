package embedpg

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// requireBins skips the test when no PostgreSQL server binaries exist.
func requireBins(t *testing.T) {
	t.Helper()
	if _, err := FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
}

// testDataDir returns a fresh directory for a cluster. As root it is created
// under /tmp (whose parents the postgres user can traverse), not under
// t.TempDir(), whose per-test parent is mode 0700. Any server left running
// in it is stopped, and the directory removed, when the test ends.
func testDataDir(t *testing.T) string {
	t.Helper()
	base := ""
	if os.Geteuid() == 0 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "embedpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		forceStop(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return dir
}

// forceStop stops whatever server runs for dir, whoever started it.
func forceStop(t *testing.T, dir string) {
	c, err := newCluster(Config{DataDir: dir})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = lookupSysUser(serverUser); err != nil {
			return // never got as far as starting anything
		}
	}
	if err := c.stopServer(context.Background(), "immediate"); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, ctx context.Context, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestStartStopRestartKeepsData(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	dir := testDataDir(t)
	cfg := Config{DataDir: dir, Database: "workgraph", Fast: true, Logger: testLogger(t)}

	t0 := time.Now()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	firstStart := time.Since(t0)
	if c.Reused() {
		t.Error("Reused() = true for a fresh cluster")
	}
	wantURL := "postgres://postgres@/workgraph?host=" + dir + "/run&sslmode=disable"
	if got := c.URL("workgraph"); got != wantURL {
		t.Errorf("URL = %q, want %q", got, wantURL)
	}

	// Layout, ownership and modes.
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode = %v, want 0700", fi.Mode().Perm())
	}
	if os.Geteuid() == 0 {
		u, err := lookupSysUser(serverUser)
		if err != nil {
			t.Fatal(err)
		}
		if uid, _, _ := fileOwner(fi); uid != u.uid {
			t.Errorf("data dir owner uid = %d, want %d (postgres)", uid, u.uid)
		}
	}
	for _, p := range []string{"data/PG_VERSION", "run/.s.PGSQL.5432", "log/postgresql.log"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Error(err)
		}
	}

	conn := connect(t, ctx, c.URL("workgraph"))
	for sql, want := range map[string]string{
		"SHOW listen_addresses":     "",
		"SHOW fsync":                "off",
		"SHOW synchronous_commit":   "off",
		"SHOW full_page_writes":     "off",
		"SHOW max_connections":      "200",
		"SHOW shared_buffers":       "128MB",
		"SHOW server_encoding":      "UTF8",
		"SELECT current_user":       "postgres",
		"SELECT current_database()": "workgraph",
	} {
		if got := queryString(t, ctx, conn, sql); got != want {
			t.Errorf("%s = %q, want %q", sql, got, want)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO notes VALUES (1, 'survives restarts')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	t0 = time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopTime := time.Since(t0)
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("postmaster.pid after Stop: %v", err)
	}
	if conn, err := pgx.Connect(ctx, c.URL("workgraph")); err == nil {
		conn.Close(ctx)
		t.Error("server still accepts connections after Stop")
	}
	if err := c.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	t0 = time.Now()
	c2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	restart := time.Since(t0)
	if c2.Reused() {
		t.Error("Reused() = true after Stop")
	}
	conn = connect(t, ctx, c2.URL("workgraph"))
	if got := queryString(t, ctx, conn, "SELECT body FROM notes WHERE id = 1"); got != "survives restarts" {
		t.Errorf("row after restart = %q", got)
	}
	conn.Close(ctx)
	if err := c2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("timings: first Start (initdb+start) %v, Stop %v, restart %v",
		firstStart.Round(time.Millisecond), stopTime.Round(time.Millisecond), restart.Round(time.Millisecond))
}

func TestReuseRunningServer(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	// A path with a space and a created parent exercises the quoting of
	// pg_ctl's shell command line and of the URL.
	base := testDataDir(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "my cluster", "pg")
	t.Cleanup(func() { forceStop(t, dir) })

	// Durable settings (Fast unset) as for `workgraph serve`.
	c1, err := Start(ctx, Config{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, ctx, c1.URL("postgres"))
	if got := queryString(t, ctx, conn, "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %q, want on", got)
	}
	conn.Close(ctx)

	t0 := time.Now()
	c2, err := Start(ctx, Config{DataDir: dir, Database: "other", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start reusing a running server took %v", time.Since(t0).Round(time.Millisecond))
	if !c2.Reused() {
		t.Fatal("second Start did not reuse the running server")
	}
	// The reused server got the requested database.
	conn = connect(t, ctx, c2.URL("other"))
	conn.Close(ctx)
	// Stop on a reused cluster leaves the server running.
	if err := c2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	conn = connect(t, ctx, c1.URL("postgres"))
	conn.Close(ctx)

	// With StopReused, Stop does stop it.
	c3, err := Start(ctx, Config{DataDir: dir, StopReused: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c3.Reused() {
		t.Fatal("third Start did not reuse the running server")
	}
	if err := c3.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, c1.URL("postgres")); err == nil {
		conn.Close(ctx)
		t.Error("server still running after Stop with StopReused")
	}
	// The original owner's Stop finds nothing to stop.
	if err := c1.Stop(ctx); err != nil {
		t.Errorf("Stop of an already stopped server: %v", err)
	}
}

func TestConcurrentStart(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	dir := testDataDir(t)

	const n = 3
	clusters := make([]*Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			clusters[i], errs[i] = Start(ctx, Config{DataDir: dir, Database: "workgraph", Fast: true})
		})
	}
	wg.Wait()
	started := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Start #%d: %v", i, errs[i])
		}
		if !clusters[i].Reused() {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("%d of %d concurrent Starts started a server, want 1", started, n)
	}
	for _, c := range clusters {
		conn := connect(t, ctx, c.URL("workgraph"))
		conn.Close(ctx)
	}
	for _, c := range clusters {
		if err := c.Stop(ctx); err != nil {
			t.Error(err)
		}
	}
}

func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	dir := clusterDir(t)
	cfg := Config{DataDir: dir, Database: "workgraph", Logger: testLogger(t)}

	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, ctx, c.URL("workgraph"))
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('committed before crash')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	pid, err := c.postmasterPID()
	if err != nil || pid == 0 {
		t.Fatalf("postmaster pid = %d, %v", pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			t.Fatal("postmaster did not die")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err != nil {
		t.Fatalf("expected a stale postmaster.pid: %v", err)
	}

	t0 := time.Now()
	c2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start after a crash (stale postmaster.pid, crash recovery) took %v", time.Since(t0).Round(time.Millisecond))
	if c2.Reused() {
		t.Error("Start reused a dead server")
	}
	conn = connect(t, ctx, c2.URL("workgraph"))
	if got := queryString(t, ctx, conn, "SELECT v FROM t"); got != "committed before crash" {
		t.Errorf("row after crash = %q", got)
	}
	conn.Close(ctx)
	if err := c2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStalePIDRecycled covers a postmaster.pid whose PID now belongs to an
// unrelated live process of the server user: PostgreSQL itself would refuse
// to start, and pg_ctl stop would signal that process.
func TestStalePIDRecycled(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	dir := clusterDir(t)
	cfg := Config{DataDir: dir, Fast: true, Logger: testLogger(t)}

	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// An unrelated process running as the server user, outside the data dir.
	sleeper := exec.Command("sleep", "300")
	sleeper.Dir = "/"
	setCredential(sleeper, c.runAs)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	})
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(sleeper.Process.Pid)+"\n"+filepath.Join(dir, "data")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.chownIfNeeded(pidFile); err != nil {
		t.Fatal(err)
	}

	c2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Reused() {
		t.Error("Start reused an unrelated process")
	}
	if err := c2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the unrelated process was signalled: %v", err)
	}
}

func TestStartFailureIncludesServerLog(t *testing.T) {
	t.Parallel()
	requireBins(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	dir := clusterDir(t)

	_, err := Start(ctx, Config{DataDir: dir, Fast: true, Settings: map[string]string{"shared_buffers": "lots"}})
	if err == nil {
		t.Fatal("Start succeeded with an invalid setting")
	}
	for _, want := range []string{"starting PostgreSQL failed", "last lines of the server log", `invalid value for parameter "shared_buffers"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	c, nerr := newCluster(Config{DataDir: dir})
	if nerr != nil {
		t.Fatal(nerr)
	}
	if pid, _ := c.serverProcess(); pid != 0 {
		t.Errorf("server (pid %d) left running after a failed Start", pid)
	}
}

func TestUnreachableDataDirAsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	requireBins(t)
	// t.TempDir() is inside a mode-0700 root-owned directory.
	dir := filepath.Join(t.TempDir(), "pg")
	_, err := Start(t.Context(), Config{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "is not reachable by the postgres user") ||
		!strings.Contains(err.Error(), EnvDataDir) {
		t.Fatalf("err = %v, want a 'not reachable by the postgres user' error naming %s", err, EnvDataDir)
	}
}

func TestRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	requireBins(t)
	dir := testDataDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Config{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "refusing to take over") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("directory was modified: %v %v", fi.Mode(), err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	long := "/tmp/" + strings.Repeat("x", 90)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{DataDir: long}, "over the 103-byte unix socket limit"},
		{Config{DataDir: "/tmp/a$b"}, "contains '$'"},
		{Config{DataDir: "/tmp/a'b"}, "contains '\\''"},
		{Config{DataDir: "/tmp/a,b"}, "contains ','"},
		{Config{DataDir: "/tmp/embedpg-never-created", Settings: map[string]string{"port": "1"}}, "cannot be overridden"},
		{Config{DataDir: "/tmp/embedpg-never-created", Settings: map[string]string{"bad name": "1"}}, "invalid setting name"},
		{Config{DataDir: "/tmp/embedpg-never-created", BinDir: t.TempDir()}, "does not contain initdb and pg_ctl"},
	} {
		_, err := Start(t.Context(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) error = %v, want it to contain %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := os.Stat("/tmp/embedpg-never-created"); err == nil {
		t.Error("a rejected config created its data dir")
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	c := &Cluster{runDir: "/tmp/my data/run"}
	u := c.URL("work graph")
	if want := "postgres://postgres@/work%20graph?host=/tmp/my%20data/run&sslmode=disable"; u != want {
		t.Errorf("URL = %q, want %q", u, want)
	}
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "/tmp/my data/run" || cfg.Port != 5432 || cfg.User != "postgres" || cfg.Database != "work graph" {
		t.Errorf("parsed %q as host=%q port=%d user=%q database=%q", u, cfg.Host, cfg.Port, cfg.User, cfg.Database)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		getenv func(string) string
		euid   int
		home   string
		want   string
	}{
		{env(EnvDataDir, "/srv/wg"), 0, "/root", "/srv/wg"},
		{env(EnvDataDir, "/srv/wg"), 1000, "/home/u", "/srv/wg"},
		{env("XDG_DATA_HOME", "/root/.data"), 0, "/root", "/var/lib/workgraph/pg"},
		{env("XDG_DATA_HOME", "/home/u/.data"), 1000, "/home/u", "/home/u/.data/workgraph/pg"},
		{env("XDG_DATA_HOME", "relative"), 1000, "/home/u", "/home/u/.local/share/workgraph/pg"},
		{env(), 1000, "/home/u", "/home/u/.local/share/workgraph/pg"},
		{env(), 1000, "", filepath.Join(os.TempDir(), "workgraph-1000", "pg")},
	} {
		if got := defaultDataDir(tc.getenv, tc.euid, tc.home); got != tc.want {
			t.Errorf("defaultDataDir(euid=%d, home=%q) = %q, want %q", tc.euid, tc.home, got, tc.want)
		}
	}
}

// fakeBinDir creates dir holding executable stand-ins for names.
func fakeBinDir(t *testing.T, dir string, names ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindBinDirNotFound(t *testing.T) {
	t.Parallel()
	emptyBin := t.TempDir()
	s := binSearch{
		getenv: func(k string) string {
			return map[string]string{"PATH": "", EnvBinDir: emptyBin}[k]
		},
		libRoot:   t.TempDir(),
		extraDirs: []string{filepath.Join(t.TempDir(), "nonexistent")},
	}
	dir, err := s.find()
	if err == nil {
		t.Fatalf("find() = %q, want an error", dir)
	}
	for _, want := range []string{
		"no PostgreSQL server binaries (initdb, pg_ctl) found",
		"apt-get install postgresql",
		"WORKGRAPH_DATABASE_URL",
		EnvBinDir + "=" + emptyBin,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

// TestFindBinDirEnv exercises the exported FindBinDir with the process
// environment: an empty PATH and a WORKGRAPH_PG_BINDIR without binaries
// fall through to the versioned system directories (if any), and a valid
// WORKGRAPH_PG_BINDIR wins.
func TestFindBinDirEnv(t *testing.T) {
	valid := fakeBinDir(t, t.TempDir(), "initdb", "pg_ctl")
	t.Setenv("PATH", "")
	t.Setenv(EnvBinDir, valid)
	if got, err := FindBinDir(); err != nil || got != valid {
		t.Errorf("FindBinDir() = %q, %v; want %q", got, err, valid)
	}
	t.Setenv(EnvBinDir, t.TempDir())
	got, err := FindBinDir()
	if err != nil {
		if !strings.Contains(err.Error(), "apt-get install postgresql") {
			t.Errorf("unhelpful error: %v", err)
		}
	} else if !strings.HasPrefix(got, "/usr/lib/postgresql/") && got != "/usr/local/pgsql/bin" {
		t.Errorf("FindBinDir() = %q with empty PATH", got)
	}
}

func TestFindBinDirOrder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lib := filepath.Join(root, "lib")
	fakeBinDir(t, filepath.Join(lib, "9.6", "bin"), "initdb", "pg_ctl")
	fakeBinDir(t, filepath.Join(lib, "10", "bin"), "initdb", "pg_ctl")
	v15 := fakeBinDir(t, filepath.Join(lib, "15", "bin"), "initdb", "pg_ctl")
	fakeBinDir(t, filepath.Join(lib, "16", "bin"), "initdb") // incomplete
	fakeBinDir(t, filepath.Join(lib, "devel", "bin"), "initdb", "pg_ctl")

	// A PATH directory with symlinks into a complete directory, like
	// /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb.
	links := filepath.Join(root, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"initdb", "pg_ctl"} {
		if err := os.Symlink(filepath.Join(v15, n), filepath.Join(links, n)); err != nil {
			t.Fatal(err)
		}
	}
	explicit := fakeBinDir(t, filepath.Join(root, "explicit"), "initdb", "pg_ctl")
	onlyInitdb := fakeBinDir(t, filepath.Join(root, "partial"), "initdb")

	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"versioned dirs, highest complete first", map[string]string{}, v15},
		{"PATH before versioned dirs, symlinks resolved", map[string]string{"PATH": onlyInitdb + ":" + links}, v15},
		{"env var first", map[string]string{"PATH": links, EnvBinDir: explicit}, explicit},
	} {
		s := binSearch{getenv: func(k string) string { return tc.env[k] }, libRoot: lib}
		if tc.name == "versioned dirs, highest complete first" {
			// 16 is incomplete, so 15 wins; check the sort itself too.
			dirs := versionedBinDirs(lib)
			var names []string
			for _, d := range dirs {
				names = append(names, filepath.Base(filepath.Dir(d)))
			}
			if got := strings.Join(names, " "); got != "16 15 10 9.6 devel" {
				t.Errorf("versionedBinDirs order = %s", got)
			}
		}
		got, err := s.find()
		if err != nil || got != tc.want {
			t.Errorf("%s: find() = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestBinVersion(t *testing.T) {
	t.Parallel()
	requireBins(t)
	dir, _ := FindBinDir()
	v, err := binVersion(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := parseVersion(v); !ok {
		t.Errorf("binVersion = %q", v)
	}
	for in, want := range map[string]string{"15.14": "15", "9.6.24": "9.6", "16": "16"} {
		if got := majorVersion(in); got != want {
			t.Errorf("majorVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
