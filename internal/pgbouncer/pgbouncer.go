// Package pgbouncer runs a PgBouncer of its own (Debian's pgbouncer
// package) in transaction mode in front of a PostgreSQL server, for the
// tests and the benchmark that check workgraph behind a pooler. It is not
// used by the server.
package pgbouncer

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotInstalled is returned by Start when no pgbouncer binary is found
// (apt-get install pgbouncer; .ci/run installs it).
var ErrNotInstalled = errors.New("pgbouncer is not installed (apt-get install pgbouncer)")

// Config is how to run one PgBouncer.
type Config struct {
	// Backend is the URL of the PostgreSQL server to pool (its host, port,
	// user and password; any database name is passed through).
	Backend string
	// PoolSize is default_pool_size: server connections per database and
	// user. 0: 4.
	PoolSize int
}

// Bouncer is a running PgBouncer. It listens on a unix socket in a
// directory of its own and on no TCP port, so that poolers started at
// once (parallel tests, test binaries of several packages or checkouts)
// never meet: a port probed free and then bound by PgBouncer could be
// bound by another one in between, the loser's PgBouncer exit, and its
// starter, dialling the port, reach the winner's and lose its connections
// when the winner stops.
type Bouncer struct {
	// URL is Backend rewritten to go through the pooler (host: the socket
	// directory, port: socketPort).
	URL string
	// Socket is the path of the unix socket it listens on.
	Socket string
	// Log is the path of its log file.
	Log      string
	cmd      *exec.Cmd
	exited   chan error
	dir      string
	stopOnce sync.Once
}

// socketPort names the socket file (.s.PGSQL.<port>) in a Bouncer's
// directory; the directory, not the port, tells poolers apart.
const socketPort = 6432

// maxSocketPath is the longest unix socket path accepted (sun_path is 108
// bytes on Linux, 104 on the BSDs, with its terminating NUL).
const maxSocketPath = 103

// Binary returns the path of the pgbouncer binary, or ErrNotInstalled.
func Binary() (string, error) {
	if bin, err := exec.LookPath("pgbouncer"); err == nil {
		return bin, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNotInstalled
}

// socketDir makes the directory of a Bouncer's socket, config and log: in
// the temporary directory, or in /tmp when a socket there would have too
// long a path.
func socketDir() (string, error) {
	name := fmt.Sprintf(".s.PGSQL.%d", socketPort)
	dir, err := os.MkdirTemp("", "wg-pgbouncer-")
	if err != nil {
		return "", err
	}
	if len(filepath.Join(dir, name)) <= maxSocketPath {
		return dir, nil
	}
	os.RemoveAll(dir)
	return os.MkdirTemp("/tmp", "wg-pgbouncer-")
}

// Start runs PgBouncer in pool_mode = transaction on a unix socket of its
// own, trusting every client (no TCP listener), and returns once it
// accepts connections there. Running as root, it runs as the postgres
// user (PgBouncer refuses root). Stop ends it.
func Start(cfg Config) (*Bouncer, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: backend URL: %w", err)
	}
	// pgx's reading of the URL: its host may be a socket directory given
	// as a parameter (an embedded cluster's URL).
	pc, err := pgconn.ParseConfig(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: backend URL: %w", err)
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 4
	}
	dir, err := socketDir()
	if err != nil {
		return nil, err
	}
	// As postgres, PgBouncer must read its files, write its log and
	// create its socket here.
	if err := os.Chmod(dir, 0o777); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	dbUser := pc.User
	backend := fmt.Sprintf("host=%s port=%d user=%s", pc.Host, pc.Port, dbUser)
	if pc.Password != "" {
		backend += " password=" + pc.Password
	}
	auth := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(auth, []byte(fmt.Sprintf("%q \"\"\n", dbUser)), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(dir, "pgbouncer.log")
	ini := filepath.Join(dir, "pgbouncer.ini")
	// No listen_addr: no TCP listener, only the socket in dir.
	text := fmt.Sprintf(`[databases]
* = %s
[pgbouncer]
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
server_reset_query =
logfile = %s
`, backend, socketPort, dir, auth, cfg.PoolSize, logPath)
	if err := os.WriteFile(ini, []byte(text), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, ini)
	cmd.SysProcAttr = procAttr()
	if os.Geteuid() == 0 {
		// Started directly as postgres (not through runuser) so that
		// Stop's signal reaches PgBouncer itself.
		pg, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, errors.New("pgbouncer: running as root and no postgres user to run it as")
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgbouncer: start: %w", err)
	}
	b := &Bouncer{Socket: filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", socketPort)), Log: logPath,
		cmd: cmd, exited: make(chan error, 1), dir: dir}
	go func() { b.exited <- cmd.Wait() }()
	pooled := *u
	pooled.Host = ""
	q := pooled.Query()
	q.Set("host", dir)
	q.Set("port", strconv.Itoa(socketPort))
	pooled.RawQuery = q.Encode()
	b.URL = pooled.String()
	if err := b.waitDial(); err != nil {
		log, _ := os.ReadFile(logPath)
		b.kill()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgbouncer: %w; its log:\n%s", err, log)
	}
	return b, nil
}

// waitDial waits until the pooler accepts a connection on its socket
// (within about 5 s), or reports why not. Nothing else listens in its
// directory: a connection accepted there is this PgBouncer's.
func (b *Bouncer) waitDial() error {
	for range 200 {
		if c, err := net.DialTimeout("unix", b.Socket, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-b.exited:
			b.exited <- err
			return fmt.Errorf("exited before accepting connections (%v)", err)
		case <-time.After(25 * time.Millisecond):
		}
	}
	return errors.New("did not accept connections on its socket within 5 s")
}

func (b *Bouncer) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// Stop ends PgBouncer (SIGINT, then SIGKILL after 10 s) and removes its
// files. Calls after the first do nothing.
func (b *Bouncer) Stop() {
	b.stopOnce.Do(func() {
		_ = b.cmd.Process.Signal(os.Interrupt)
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			b.kill()
		}
		os.RemoveAll(b.dir)
	})
}
