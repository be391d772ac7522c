package embedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Config describes an embedded cluster. The zero value is usable: a durable
// cluster in DefaultDataDir() run by the binaries FindBinDir() finds.
type Config struct {
	// DataDir is the directory the cluster lives in: the PostgreSQL data
	// directory is DataDir/data, the unix socket is in DataDir/run and the
	// server log is DataDir/log/postgresql.log. Empty means DefaultDataDir().
	// A relative path is made absolute. It is created (with missing
	// parents, mode 0755) if needed and kept at mode 0700; when running as
	// root it is owned by the postgres user. It must be dedicated to the
	// cluster: Start refuses to change the owner or mode of an existing
	// directory holding anything else. The path may contain letters,
	// digits, spaces and any of / . _ - + @ : ~ = % (pg_ctl passes it
	// through a shell), and DataDir/run/.s.PGSQL.5432 must fit in a unix
	// socket address (at most 103 bytes).
	DataDir string

	// BinDir is the directory holding initdb, pg_ctl and postgres. Empty
	// means FindBinDir(); in that case, if the existing cluster was created
	// by another major version than the binaries found, Start also tries
	// /usr/lib/postgresql/<that version>/bin.
	BinDir string

	// Logger receives progress messages (initdb, start, reuse, stop). Nil
	// discards them. The server's own log goes to DataDir/log/postgresql.log.
	Logger *slog.Logger

	// Database, if not empty, is created (owned by the postgres superuser)
	// after the server is up, unless it already exists.
	Database string

	// Fast trades durability for speed, for throwaway test clusters: the
	// server runs with fsync=off, synchronous_commit=off and
	// full_page_writes=off, and initdb with --no-sync. A clean Stop still
	// writes everything to disk, but an OS crash or power loss can corrupt
	// the cluster. Leave it false for `workgraph serve`.
	Fast bool

	// Settings are extra server settings, passed as `postgres -c
	// name=value` (so they override postgresql.conf and ALTER SYSTEM). They
	// override the defaults (max_connections=200, shared_buffers=128MB and
	// the Fast settings). listen_addresses, port and
	// unix_socket_directories cannot be set. They apply only when Start
	// starts the server, not when it reuses a running one.
	Settings map[string]string

	// StopReused makes Stop stop the server even when Start did not start it
	// but reused one that was already running. By default Stop leaves such
	// a server running, since it may belong to another process.
	StopReused bool

	// Own makes the calling process the one owner of DataDir until Stop
	// (or its death): Start takes DataDir/owner.lock, an flock(2) that the
	// kernel releases when the process dies however it dies, and fails at
	// once with an *OwnedError naming the owner's pid when a live process
	// holds it. A server found running while the lock is free was left by
	// a dead owner: Start adopts it, or, when it runs with other socket or
	// durability settings than Start would give it, stops it and starts it
	// again. Stop then stops the server, started or adopted. Without Own,
	// Start shares the server with whoever else uses DataDir (the test
	// harness's mode).
	Own bool

	// JoinOwner, with Own, makes Start use the running server of a live
	// owner instead of failing with an *OwnedError: the Cluster is then a
	// guest that neither owns nor stops the server (a one-off command such
	// as `workgraph migrate` beside a running `workgraph serve`). Start
	// fails if the owner's server is not running.
	JoinOwner bool
}

const (
	port = 5432
	// maxSocketPath is the longest unix socket path accepted: sun_path is
	// 108 bytes on Linux and 104 on macOS/BSD, including the NUL.
	maxSocketPath = 103
	// defaultTimeout bounds starting and stopping when ctx has no deadline.
	defaultTimeout = 90 * time.Second
	// logRotateSize is the server log size above which Start moves it to
	// postgresql.log.1 before starting the server.
	logRotateSize = 16 << 20
	// logTailLines is how many server log lines a start failure includes.
	logTailLines = 20
)

// Cluster is a running embedded PostgreSQL server, as returned by Start. Its
// methods are safe for concurrent use.
type Cluster struct {
	cfg     Config
	dataDir string // cfg.DataDir, absolute
	pgData  string // dataDir/data
	runDir  string // dataDir/run
	logFile string // dataDir/log/postgresql.log
	binDir  string
	runAs   *sysUser // nil unless the caller is root
	log     *slog.Logger

	mu      sync.Mutex
	started bool        // this Cluster started the server (vs. reused it)
	adopted bool        // reused a server left running by a dead owner (Config.Own)
	owner   *ownerLock  // held from Start to Stop with Config.Own
	guestOf *OwnedError // with Config.JoinOwner, the live owner whose server this uses
	stopped bool
}

// Start makes sure a PostgreSQL server for cfg.DataDir is running and ready,
// and returns a handle on it.
//
// On first use it runs initdb (superuser "postgres", trust authentication on
// the unix socket, TCP rejected, UTF8 encoding, C.UTF-8 locale or C if that
// locale is missing). It then starts the server with pg_ctl, listening only
// on the unix socket in DataDir/run, and waits until it accepts connections.
// If a server for the same DataDir is already running (postmaster.pid names
// a live postmaster whose socket answers), Start reuses it instead; see
// Cluster.Reused. A postmaster.pid left by a crashed server is handled, also
// when its PID now belongs to an unrelated process. Finally, cfg.Database is
// created if missing.
//
// When the caller is root, every command runs as the postgres system user,
// which is created if needed (see the package documentation).
//
// Concurrent Starts on the same DataDir, from goroutines or processes, are
// serialized with a lock file; one starts the server, the others reuse it.
// With Config.Own, only one process at a time may hold the cluster: see
// there, and [OwnedError].
// ctx bounds the whole operation (default 90s for the server to start);
// cancelling it does not stop a server that is already starting, which a
// later Start then reuses. On error nothing is left running by this call,
// except in that cancellation case.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if !supported {
		return nil, errors.New("embedpg: embedded PostgreSQL is only supported on unix-like systems; set WORKGRAPH_DATABASE_URL to an existing server")
	}
	t0 := time.Now()
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = lookupOrCreateUser(ctx, serverUser, c.log.Info); err != nil {
			return nil, err
		}
	}
	if err := c.makeDataDir(); err != nil {
		return nil, err
	}
	if cfg.Own {
		c.owner, err = takeOwner(ctx, c.dataDir)
		var owned *OwnedError
		switch {
		case errors.As(err, &owned) && cfg.JoinOwner:
			c.guestOf = owned
		case err != nil:
			return nil, fmt.Errorf("embedpg: %w; stop that process, or give this one another data folder (%s) or an existing server (WORKGRAPH_DATABASE_URL)", err, EnvDataDir)
		}
	}
	if err := c.start(ctx, t0); err != nil {
		c.releaseOwner()
		return nil, err
	}
	return c, nil
}

// start is Start once the data directory exists (and, with Config.Own, is
// owned).
func (c *Cluster) start(ctx context.Context, t0 time.Time) error {
	unlock, err := lockFile(ctx, c.lockPath())
	if err != nil {
		return err
	}
	defer unlock()

	if err := c.prepareDirs(); err != nil {
		return err
	}
	reused, err := c.reuseRunning(ctx)
	if err != nil {
		return err
	}
	if reused && c.owner != nil {
		if reused, err = c.adoptOrStop(ctx); err != nil {
			return err
		}
	}
	if !reused && c.guestOf != nil {
		return fmt.Errorf("embedpg: %w, but its PostgreSQL is not running; restart that process, or stop it and try again", c.guestOf)
	}
	if !reused {
		if err := c.initIfNeeded(ctx); err != nil {
			return err
		}
		if err := c.startServer(ctx); err != nil {
			return err
		}
		c.started = true
	}
	fail := func(err error) error {
		if c.started {
			if serr := c.stopServer(context.WithoutCancel(ctx), "fast"); serr != nil {
				c.log.Warn("stopping PostgreSQL after failed start", "err", serr)
			}
		}
		return err
	}
	if err := c.ping(ctx); err != nil {
		return fail(fmt.Errorf("embedpg: server started but does not answer on %s: %w%s", c.runDir, err, c.logTailMsg(0)))
	}
	if c.cfg.Database != "" {
		if err := c.ensureDatabase(ctx, c.cfg.Database); err != nil {
			return fail(err)
		}
	}
	c.log.Info("embedded PostgreSQL ready", "data_dir", c.dataDir, "socket_dir", c.runDir,
		"reused", reused, "adopted", c.adopted, "guest", c.guestOf != nil, "elapsed", time.Since(t0).Round(time.Millisecond))
	return nil
}

func newCluster(cfg Config) (*Cluster, error) {
	c, err := layout(cfg)
	if err != nil {
		return nil, err
	}
	for name := range cfg.Settings {
		switch strings.ToLower(name) {
		case "listen_addresses", "port", "unix_socket_directories":
			return nil, fmt.Errorf("embedpg: setting %s cannot be overridden: the embedded server listens only on %s", name, c.socketPath())
		}
		if !validSettingName(name) {
			return nil, fmt.Errorf("embedpg: invalid setting name %q", name)
		}
	}
	c.binDir = cfg.BinDir
	if c.binDir == "" {
		if c.binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if !hasServerBins(c.binDir) {
		return nil, fmt.Errorf("embedpg: BinDir %s does not contain initdb and pg_ctl", c.binDir)
	}
	return c, nil
}

// layout returns a Cluster with the paths of cfg.DataDir filled in and
// checked, without looking for binaries.
func layout(cfg Config) (*Cluster, error) {
	c := &Cluster{cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	dir := cfg.DataDir
	if dir == "" {
		dir = DefaultDataDir()
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedpg: data dir: %w", err)
	}
	if err := checkPathChars(dir); err != nil {
		return nil, err
	}
	c.dataDir = dir
	c.pgData = filepath.Join(dir, "data")
	c.runDir = filepath.Join(dir, "run")
	c.logFile = filepath.Join(dir, "log", "postgresql.log")
	if sock := c.socketPath(); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("embedpg: data dir %s is too long: the server socket %s would be %d bytes, over the %d-byte unix socket limit; "+
			"use a shorter data dir (set %s, e.g. /var/lib/workgraph/pg)", dir, sock, len(sock), maxSocketPath, EnvDataDir)
	}
	return c, nil
}

// checkPathChars rejects data dir paths that would be mangled by the shell
// command line pg_ctl builds, by postgresql.conf list syntax, or by the
// connection URL's host list.
func checkPathChars(dir string) error {
	for _, r := range dir {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("/._-+@:~=% ", r) {
			continue
		}
		return fmt.Errorf("embedpg: data dir %q contains %q; pg_ctl runs the server through a shell, so use a path made of letters, digits, spaces and / . _ - + @ : ~ = %%", dir, r)
	}
	return nil
}

func validSettingName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func (c *Cluster) socketPath() string {
	return filepath.Join(c.runDir, ".s.PGSQL."+strconv.Itoa(port))
}

func (c *Cluster) lockPath() string { return filepath.Join(c.dataDir, "embedpg.lock") }

// URL returns a connection URL for database on this cluster, as the
// superuser "postgres", over the unix socket, e.g.
//
//	postgres://postgres@/workgraph?host=/var/lib/workgraph/pg/run&sslmode=disable
//
// pgx v5 and libpq both accept it. database is path-escaped; an empty
// database means the server default (the user name, "postgres"). URL does
// not check that the database exists or that the server is running.
func (c *Cluster) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Path:     "/" + database,
		RawQuery: "host=" + queryEscapeKeepSlash(c.runDir) + "&sslmode=disable",
	}
	if port != 5432 {
		u.RawQuery += "&port=" + strconv.Itoa(port)
	}
	return u.String()
}

// queryEscapeKeepSlash is url.QueryEscape without escaping '/', which is
// legal in a query and keeps socket directories readable in logs, and with
// spaces as %20: libpq and pgx do not decode '+' as a space.
func queryEscapeKeepSlash(s string) string {
	return strings.NewReplacer("%2F", "/", "+", "%20").Replace(url.QueryEscape(s))
}

// SocketDir returns the directory holding the server's unix socket
// (DataDir/run), the value of the host parameter in URL.
func (c *Cluster) SocketDir() string { return c.runDir }

// DataDir returns the absolute directory the cluster lives in.
func (c *Cluster) DataDir() string { return c.dataDir }

// LogFile returns the path of the server log, DataDir/log/postgresql.log.
func (c *Cluster) LogFile() string { return c.logFile }

// Reused reports whether Start found the server already running and reused
// it rather than starting it. A reused server is left running by Stop unless
// Config.StopReused is set, or Config.Own made Start adopt it.
func (c *Cluster) Reused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.started
}

// Stop shuts the server down with `pg_ctl stop -m fast` (sessions are
// disconnected, open transactions rolled back, data flushed), falling back
// to `-m immediate` if that does not finish in time, and waits for it to
// exit. It is a no-op, returning nil, if Start reused an already running
// server (unless Config.StopReused is set), if the server is no longer
// running, or if Stop was already called successfully. ctx bounds the wait
// (default 90s). The data is kept; Start brings it back. With Config.Own, the
// server is stopped also when Start adopted it, and the owner lock is
// released, whether stopping succeeded or not; a guest (Config.JoinOwner)
// never stops it.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.releaseOwner()
	if c.stopped {
		return nil
	}
	if c.guestOf != nil || !c.started && !c.adopted && !c.cfg.StopReused {
		c.stopped = true
		c.log.Info("leaving reused PostgreSQL server running", "data_dir", c.dataDir)
		return nil
	}
	unlock, err := lockFile(ctx, c.lockPath())
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.stopServer(ctx, "fast"); err != nil {
		return err
	}
	c.stopped = true
	return nil
}

// StopRunning stops the server of cfg.DataDir if one is running, whoever
// started it, as Stop does; it never starts or creates anything. It returns
// nil when no server runs there (or DataDir does not exist). Only DataDir,
// BinDir and Logger of cfg are used.
func StopRunning(ctx context.Context, cfg Config) error {
	if !supported {
		return nil
	}
	c, err := newCluster(Config{DataDir: cfg.DataDir, BinDir: cfg.BinDir, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	if _, err := os.Stat(c.pgData); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = lookupSysUser(serverUser); err != nil {
			return fmt.Errorf("embedpg: look up user %q: %w", serverUser, err)
		}
	}
	unlock, err := lockFile(ctx, c.lockPath())
	if err != nil {
		return err
	}
	defer unlock()
	return c.stopServer(ctx, "fast")
}

// makeDataDir creates DataDir (and missing parents, mode 0755) and, when the
// server runs as another user, checks that user can reach it.
func (c *Cluster) makeDataDir() error {
	created, err := mkdirAll(filepath.Dir(c.dataDir), 0o755)
	if err != nil {
		return fmt.Errorf("embedpg: create data dir: %w", err)
	}
	for _, d := range created {
		// Undo a restrictive umask: the postgres user must traverse these.
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("embedpg: create data dir: %w", err)
		}
	}
	if err := os.Mkdir(c.dataDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("embedpg: create data dir: %w", err)
	}
	if fi, err := os.Stat(c.dataDir); err != nil {
		return fmt.Errorf("embedpg: data dir: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("embedpg: data dir %s is not a directory", c.dataDir)
	}
	if c.runAs != nil {
		return checkReachable(c.dataDir, c.runAs)
	}
	return nil
}

// mkdirAll is os.MkdirAll that reports the directories it created.
func mkdirAll(dir string, perm fs.FileMode) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		return nil, nil
	}
	var created []string
	if parent := filepath.Dir(dir); parent != dir {
		c, err := mkdirAll(parent, perm)
		if err != nil {
			return nil, err
		}
		created = c
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return created, nil // created concurrently
		}
		return nil, err
	}
	return append(created, dir), nil
}

// ownedEntries are the names Start may find in a DataDir it takes over.
var ownedEntries = map[string]bool{
	"data": true, "data.initdb": true, "run": true, "log": true, "embedpg.lock": true, ownerLockName: true, "lost+found": true,
}

// prepareDirs gives DataDir and its run and log subdirectories the owner and
// modes the server needs. Called with the lock held.
func (c *Cluster) prepareDirs() error {
	fi, err := os.Stat(c.dataDir)
	if err != nil {
		return fmt.Errorf("embedpg: data dir: %w", err)
	}
	uid, _, ok := fileOwner(fi)
	needChown := c.runAs != nil && ok && uid != c.runAs.uid
	if needChown || fi.Mode().Perm() != 0o700 {
		entries, err := os.ReadDir(c.dataDir)
		if err != nil {
			return fmt.Errorf("embedpg: data dir: %w", err)
		}
		for _, e := range entries {
			if !ownedEntries[e.Name()] {
				return fmt.Errorf("embedpg: refusing to take over %s (to make it mode 0700%s): it contains %q, which is not the embedded cluster's; "+
					"point the data dir (%s) at an empty or dedicated directory",
					c.dataDir, map[bool]string{true: " and owned by " + serverUser}[needChown], e.Name(), EnvDataDir)
			}
		}
		if err := os.Chmod(c.dataDir, 0o700); err != nil {
			return fmt.Errorf("embedpg: data dir: %w", err)
		}
		if needChown {
			if err := os.Chown(c.dataDir, int(c.runAs.uid), int(c.runAs.gid)); err != nil {
				return fmt.Errorf("embedpg: data dir: %w", err)
			}
		}
	}
	for _, d := range []string{c.runDir, filepath.Dir(c.logFile)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("embedpg: %w", err)
		}
		if err := c.chownIfNeeded(d); err != nil {
			return err
		}
	}
	if err := c.chownIfNeeded(c.logFile); err != nil {
		return err
	}
	// A cluster copied or restored with another owner (e.g. the postgres
	// user was recreated with a new uid) would be refused by the server.
	if c.runAs != nil {
		if fi, err := os.Stat(c.pgData); err == nil {
			if uid, _, ok := fileOwner(fi); ok && uid != c.runAs.uid {
				c.log.Warn("fixing ownership of PostgreSQL data directory", "dir", c.pgData, "owner", c.runAs.name)
				err := filepath.WalkDir(c.pgData, func(p string, _ fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, int(c.runAs.uid), int(c.runAs.gid))
				})
				if err != nil {
					return fmt.Errorf("embedpg: chown %s: %w", c.pgData, err)
				}
			}
		}
	}
	return nil
}

// chownIfNeeded gives path (if it exists) to the server user when running as
// root.
func (c *Cluster) chownIfNeeded(path string) error {
	if c.runAs == nil {
		return nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("embedpg: %w", err)
	}
	if uid, _, ok := fileOwner(fi); ok && uid == c.runAs.uid {
		return nil
	}
	if err := os.Lchown(path, int(c.runAs.uid), int(c.runAs.gid)); err != nil {
		return fmt.Errorf("embedpg: %w", err)
	}
	return nil
}

// postmasterPID returns the PID recorded in postmaster.pid, or 0 if there is
// no such file (or it is empty, as after a crash during startup).
func (c *Cluster) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.pgData, "postmaster.pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("embedpg: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return 0, nil
	}
	pid, err := strconv.Atoi(line)
	if err != nil {
		return 0, fmt.Errorf("embedpg: malformed %s: %q", filepath.Join(c.pgData, "postmaster.pid"), line)
	}
	return pid, nil
}

// serverProcess reports whether postmaster.pid names a live process that
// may be this cluster's postmaster. When it names a dead process, or one
// whose working directory shows it is not a postmaster for this data
// directory (a recycled PID), it returns 0.
func (c *Cluster) serverProcess() (int, error) {
	pid, err := c.postmasterPID()
	if err != nil || pid == 0 {
		return 0, err
	}
	if !processAlive(pid) {
		return 0, nil
	}
	// A postmaster and its children run in the data directory.
	if cwd, ok := processCwd(pid); ok && !samePath(cwd, c.pgData) {
		return 0, nil
	}
	return pid, nil
}

func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// reuseRunning returns true if a server for this data directory is running
// and accepts connections. If postmaster.pid is stale it clears what would
// stop a fresh server from starting and returns false. Called with the lock
// held.
func (c *Cluster) reuseRunning(ctx context.Context) (bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	for {
		pidFile := filepath.Join(c.pgData, "postmaster.pid")
		recorded, err := c.postmasterPID()
		if err != nil {
			return false, err
		}
		if _, statErr := os.Stat(pidFile); statErr == nil && recorded == 0 {
			// Empty pid file: a server crashed while starting. The
			// server would refuse to start until it is removed.
			c.log.Warn("removing empty postmaster.pid", "file", pidFile)
			if err := os.Remove(pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("embedpg: %w", err)
			}
		}
		pid, err := c.serverProcess()
		if err != nil {
			return false, err
		}
		if pid == 0 {
			if recorded != 0 {
				// The server's own stale-lock check handles a dead PID, but
				// not one recycled by an unrelated process of the same user
				// nor an unreaped (zombie) postmaster: it would take those
				// for a live postmaster. No server for this data directory
				// runs (we hold the lock), so removing the file is safe.
				c.log.Warn("removing stale postmaster.pid of a server that is no longer running", "pid", recorded)
				if err := os.Remove(pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return false, fmt.Errorf("embedpg: %w", err)
				}
			}
			c.removeStaleSocket()
			return false, nil
		}
		perr := c.ping(ctx)
		if perr == nil {
			c.log.Info("reusing running PostgreSQL server", "pid", pid, "data_dir", c.dataDir)
			return true, nil
		}
		// Starting up, shutting down or in crash recovery: wait and look
		// again (the postmaster may also exit meanwhile).
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("embedpg: a PostgreSQL server (pid %d) is running on %s but does not accept connections on %s: %v; "+
				"stop it (pg_ctl stop -D %s) or see the server log%s", pid, c.pgData, c.runDir, perr, c.pgData, c.logTailMsg(0))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeStaleSocket removes the socket and socket lock file a dead server
// left behind. Called only when no server for this data directory runs.
func (c *Cluster) removeStaleSocket() {
	for _, p := range []string{c.socketPath(), c.socketPath() + ".lock"} {
		if err := os.Remove(p); err == nil {
			c.log.Debug("removed stale socket file", "file", p)
		}
	}
}

// initIfNeeded runs initdb unless DataDir/data already holds a cluster, and
// checks the binaries match the cluster's major version. initdb works in
// DataDir/data.initdb, renamed to DataDir/data only on success, so an
// interrupted initdb never leaves a half-made cluster behind.
func (c *Cluster) initIfNeeded(ctx context.Context) error {
	pgVersion, err := os.ReadFile(filepath.Join(c.pgData, "PG_VERSION"))
	if err == nil {
		return c.checkVersion(ctx, strings.TrimSpace(string(pgVersion)))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("embedpg: %w", err)
	}
	if entries, err := os.ReadDir(c.pgData); err == nil {
		if len(entries) > 0 {
			return fmt.Errorf("embedpg: %s exists but is not a PostgreSQL data directory (no PG_VERSION); move it away", c.pgData)
		}
		if err := os.Remove(c.pgData); err != nil {
			return fmt.Errorf("embedpg: %w", err)
		}
	}

	tmp := filepath.Join(c.dataDir, "data.initdb")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("embedpg: remove leftover %s: %w", tmp, err)
	}
	c.log.Info("initializing PostgreSQL cluster", "dir", c.pgData, "bin_dir", c.binDir)
	t0 := time.Now()
	var out string
	for _, locale := range []string{"C.UTF-8", "C"} {
		args := []string{
			"-D", tmp,
			"--username=postgres",
			"--auth-local=trust",
			"--auth-host=reject",
			"--encoding=UTF8",
			"--locale=" + locale,
		}
		if c.cfg.Fast {
			args = append(args, "--no-sync")
		}
		out, err = c.run(ctx, "initdb", args...)
		if err == nil {
			break
		}
		_ = os.RemoveAll(tmp)
		if !strings.Contains(out, "locale") {
			break
		}
		c.log.Debug("initdb failed with locale, retrying", "locale", locale, "output", out)
	}
	if err != nil {
		return fmt.Errorf("embedpg: initdb failed: %w\n%s", err, strings.TrimSpace(out))
	}
	if err := os.Rename(tmp, c.pgData); err != nil {
		return fmt.Errorf("embedpg: %w", err)
	}
	c.log.Info("initialized PostgreSQL cluster", "elapsed", time.Since(t0).Round(time.Millisecond))
	return nil
}

// checkVersion makes sure the binaries can run a cluster of major version
// dataVersion, switching to /usr/lib/postgresql/<version>/bin when BinDir
// was not given explicitly.
func (c *Cluster) checkVersion(ctx context.Context, dataVersion string) error {
	binVer, err := binVersion(ctx, c.binDir)
	if err != nil {
		return err
	}
	if binVer == dataVersion {
		return nil
	}
	if c.cfg.BinDir == "" && os.Getenv(EnvBinDir) == "" {
		alt := filepath.Join(defaultBinSearch().libRoot, dataVersion, "bin")
		if hasServerBins(alt) {
			c.log.Info("using binaries matching the cluster's version", "version", dataVersion, "bin_dir", alt)
			c.binDir = alt
			return nil
		}
	}
	return fmt.Errorf("embedpg: %s was created by PostgreSQL %s but the binaries in %s are PostgreSQL %s; "+
		"install PostgreSQL %s and set %s to its bin directory, or move %s away to start with an empty database",
		c.pgData, dataVersion, c.binDir, binVer, dataVersion, EnvBinDir, c.dataDir)
}

// serverSettings returns the -c settings the server is started with.
func (c *Cluster) serverSettings() map[string]string {
	s := map[string]string{
		"max_connections": "200",
		"shared_buffers":  "128MB",
	}
	if c.cfg.Fast {
		s["fsync"] = "off"
		s["synchronous_commit"] = "off"
		s["full_page_writes"] = "off"
	}
	for k, v := range c.cfg.Settings {
		s[k] = v
	}
	s["listen_addresses"] = ""
	s["port"] = strconv.Itoa(port)
	s["unix_socket_directories"] = c.runDir
	return s
}

// postgresOptions renders settings for pg_ctl -o, which pastes them into a
// /bin/sh command line: each "name=value" is single-quoted.
func postgresOptions(settings map[string]string) string {
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("-c ")
		b.WriteString(shellQuote(k + "=" + settings[k]))
	}
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startServer runs pg_ctl start and waits for the server to be ready.
// Called with the lock held and no server running.
func (c *Cluster) startServer(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c.rotateLog()
	for attempt := 0; ; attempt++ {
		offset := fileSize(c.logFile)
		c.log.Info("starting PostgreSQL", "data_dir", c.pgData, "log", c.logFile)
		t0 := time.Now()
		out, err := c.run(ctx, "pg_ctl", "start",
			"-D", c.pgData,
			"-l", c.logFile,
			"-w", "-t", timeoutSeconds(ctx),
			"-o", postgresOptions(c.serverSettings()))
		if err == nil {
			c.log.Info("PostgreSQL started", "elapsed", time.Since(t0).Round(time.Millisecond))
			return nil
		}
		tail := c.logTail(offset)
		// After a crash, orphaned backends may hold the old shared memory
		// segment for a moment; they exit once they notice the postmaster
		// is gone.
		if strings.Contains(tail, "pre-existing shared memory block") && attempt < 20 && ctx.Err() == nil {
			c.log.Info("old server processes still hold shared memory; retrying", "attempt", attempt+1)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		// pg_ctl may have given up waiting while the server still starts.
		if pid, _ := c.serverProcess(); pid != 0 {
			_ = c.stopServer(context.WithoutCancel(ctx), "immediate")
		}
		return fmt.Errorf("embedpg: starting PostgreSQL failed: %w\n%s%s", err, strings.TrimSpace(out), formatTail(c.logFile, tail))
	}
}

// stopServer runs pg_ctl stop if a server for this data directory runs.
func (c *Cluster) stopServer(ctx context.Context, mode string) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	pid, err := c.serverProcess()
	if err != nil {
		return err
	}
	if pid == 0 {
		return nil
	}
	c.log.Info("stopping PostgreSQL", "pid", pid, "mode", mode)
	offset := fileSize(c.logFile)
	t0 := time.Now()
	out, err := c.run(ctx, "pg_ctl", "stop", "-D", c.pgData, "-m", mode, "-w", "-t", timeoutSeconds(ctx))
	if err == nil {
		// pg_ctl -w returns once postmaster.pid is gone, and the
		// postmaster removes it on its way out, a moment before it has
		// exited (longer on a loaded machine): wait for the process too,
		// so that no postmaster outlives a Stop that returned.
		if err := waitExited(ctx, pid); err != nil {
			return fmt.Errorf("embedpg: PostgreSQL (pid %d) removed its pid file but did not exit: %w", pid, err)
		}
		c.log.Info("PostgreSQL stopped", "elapsed", time.Since(t0).Round(time.Millisecond))
		return nil
	}
	if pid, _ := c.serverProcess(); pid == 0 {
		return nil // it went away anyway
	}
	if mode != "immediate" {
		c.log.Warn("fast shutdown failed; trying immediate", "err", err, "output", out)
		if err := c.stopServer(context.WithoutCancel(ctx), "immediate"); err == nil {
			return nil
		}
	}
	return fmt.Errorf("embedpg: stopping PostgreSQL failed: %w\n%s%s", err, strings.TrimSpace(out), formatTail(c.logFile, c.logTail(offset)))
}

// waitExited waits until process pid has exited (a zombie counts as
// exited), or ctx ends.
func waitExited(ctx context.Context, pid int) error {
	for processAlive(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// run executes a PostgreSQL binary as the server user, from DataDir, and
// returns its combined output.
func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.dataDir
	cmd.Env = serverEnv()
	setCredential(cmd, c.runAs)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return buf.String(), err
}

// serverEnv is the environment minus PG* variables (PGDATA, PGPORT, PGHOST,
// ...), which could redirect pg_ctl and initdb.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

// timeoutSeconds is the pg_ctl -t value for the time left in ctx.
func timeoutSeconds(ctx context.Context) string {
	secs := int(defaultTimeout / time.Second)
	if dl, ok := ctx.Deadline(); ok {
		secs = int(time.Until(dl) / time.Second)
	}
	return strconv.Itoa(max(secs, 1))
}

// connect opens a connection to database over the socket.
func (c *Cluster) connect(ctx context.Context, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.URL(database))
	if err != nil {
		return nil, fmt.Errorf("embedpg: %w", err)
	}
	cfg.ConnectTimeout = 5 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

// ping checks that the server on the socket accepts connections and serves
// this data directory.
func (c *Cluster) ping(ctx context.Context) error {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return err
	}
	if !samePath(dir, c.pgData) {
		return fmt.Errorf("the server on %s serves %s, not %s", c.runDir, dir, c.pgData)
	}
	return nil
}

func (c *Cluster) ensureDatabase(ctx context.Context, name string) error {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("embedpg: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("embedpg: look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	c.log.Info("creating database", "database", name)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
			return nil
		}
		return fmt.Errorf("embedpg: create database %q: %w", name, err)
	}
	return nil
}

// rotateLog moves a large server log aside before the server (re)starts.
func (c *Cluster) rotateLog() {
	if fileSize(c.logFile) > logRotateSize {
		if err := os.Rename(c.logFile, c.logFile+".1"); err != nil {
			c.log.Warn("rotating server log", "err", err)
		}
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last logTailLines lines of the server log written
// after offset (bounded to the last 64 KiB).
func (c *Cluster) logTail(offset int64) string {
	f, err := os.Open(c.logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	size := fileSize(c.logFile)
	if offset > size {
		offset = 0 // rotated or truncated
	}
	offset = max(offset, size-64<<10)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func (c *Cluster) logTailMsg(offset int64) string {
	return formatTail(c.logFile, c.logTail(offset))
}

func formatTail(logFile, tail string) string {
	if tail == "" {
		return "\n(server log " + logFile + " is empty)"
	}
	return "\nlast lines of the server log " + logFile + ":\n" + tail
}
