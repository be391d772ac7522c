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
	"syscall"
	"time"
)

// ErrNotInstalled is returned by Start when no pgbouncer binary is found
// (apt-get install pgbouncer; .ci/run installs it).
var ErrNotInstalled = errors.New("pgbouncer is not installed (apt-get install pgbouncer)")

// Config is how to run one PgBouncer.
type Config struct {
	// Backend is the URL of the PostgreSQL server to pool (its host, port,
	// user and password; any database name is passed through).
	Backend string
	// FirstPort and LastPort bound the ports tried (a port another process
	// holds is skipped).
	FirstPort, LastPort int
	// PoolSize is default_pool_size: server connections per database and
	// user. 0: 4.
	PoolSize int
}

// Bouncer is a running PgBouncer.
type Bouncer struct {
	// URL is Backend rewritten to go through the pooler.
	URL string
	// Port is the port it listens on (127.0.0.1).
	Port int
	// Log is the path of its log file.
	Log    string
	cmd    *exec.Cmd
	exited chan error
	dir    string
}

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

// Start runs PgBouncer in pool_mode = transaction on the first free port
// of cfg's range, trusting every client (it listens on 127.0.0.1 only), and
// returns once it accepts connections. Running as root, it runs as the
// postgres user (PgBouncer refuses root). Stop ends it.
func Start(cfg Config) (*Bouncer, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: backend URL: %w", err)
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 4
	}
	dir, err := os.MkdirTemp("", "wg-pgbouncer-")
	if err != nil {
		return nil, err
	}
	// As postgres, PgBouncer must read its files and write its log here.
	if err := os.Chmod(dir, 0o777); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	dbUser := u.User.Username()
	backend := fmt.Sprintf("host=%s port=%s user=%s", u.Hostname(), u.Port(), dbUser)
	if password, ok := u.User.Password(); ok && password != "" {
		backend += " password=" + password
	}
	auth := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(auth, []byte(fmt.Sprintf("%q \"\"\n", dbUser)), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(dir, "pgbouncer.log")
	var lastLog []byte
	for port := cfg.FirstPort; port <= cfg.LastPort; port++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		ln.Close()
		ini := filepath.Join(dir, "pgbouncer.ini")
		text := fmt.Sprintf(`[databases]
* = %s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
server_reset_query =
logfile = %s
`, backend, port, auth, cfg.PoolSize, logPath)
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
		b := &Bouncer{Port: port, Log: logPath, cmd: cmd, exited: make(chan error, 1), dir: dir}
		go func() { b.exited <- cmd.Wait() }()
		pooled := *u
		pooled.Host = fmt.Sprintf("127.0.0.1:%d", port)
		b.URL = pooled.String()
		if b.waitDial() {
			return b, nil
		}
		lastLog, _ = os.ReadFile(logPath)
		b.kill()
	}
	os.RemoveAll(dir)
	if lastLog != nil {
		return nil, fmt.Errorf("pgbouncer did not start on any port of %d-%d; last log:\n%s", cfg.FirstPort, cfg.LastPort, lastLog)
	}
	return nil, fmt.Errorf("pgbouncer: no free port in %d-%d", cfg.FirstPort, cfg.LastPort)
}

// waitDial reports whether the pooler accepts a connection before its
// process exits (within about 5 s).
func (b *Bouncer) waitDial() bool {
	addr := fmt.Sprintf("127.0.0.1:%d", b.Port)
	for range 200 {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return true
		}
		select {
		case err := <-b.exited:
			b.exited <- err
			return false
		case <-time.After(25 * time.Millisecond):
		}
	}
	return false
}

func (b *Bouncer) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// Stop ends PgBouncer (SIGINT, then SIGKILL after 10 s) and removes its
// files.
func (b *Bouncer) Stop() {
	_ = b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.kill()
	}
	os.RemoveAll(b.dir)
}
