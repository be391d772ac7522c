package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pgCluster is the suite's own PostgreSQL cluster, run by pg_ctl (as the
// postgres user when the suite runs as root).
type pgCluster struct {
	bindir string
	dir    string
	port   int
	runAs  string // "" or the user to run as
	opts   string
}

// pgBindir finds the PostgreSQL server binaries.
func pgBindir() (string, error) {
	if d := os.Getenv("WORKGRAPH_PG_BINDIR"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb) found: set WORKGRAPH_PG_BINDIR")
}

// startCluster creates a cluster under base and starts it on port.
func startCluster(ctx context.Context, base string, port int) (*pgCluster, error) {
	bindir, err := pgBindir()
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bindir: bindir, dir: filepath.Join(base, "pg"), port: port}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	if c.runAs != "" {
		u, err := user.Lookup(c.runAs)
		if err != nil {
			return nil, fmt.Errorf("running as root needs the %s user: %w", c.runAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(base, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return nil, err
		}
	}
	c.opts = fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=150",
		port, c.dir)
	if out, err := c.run(ctx, "initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dir, "-l", filepath.Join(c.dir, "server.log"), "-o", c.opts, "-w", "-t", "60", "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return c, nil
}

func (c *pgCluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	bin := filepath.Join(c.bindir, name)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", bin}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

// URL is the cluster's postgres database, directly (not via the proxy).
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// restart is the fault: a fast shutdown and a start.
func (c *pgCluster) restart(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dir, "-l", filepath.Join(c.dir, "server.log"), "-o", c.opts, "-m", "fast", "-w", "-t", "60", "restart"); err != nil {
		return fmt.Errorf("pg_ctl restart: %v: %s", err, out)
	}
	return nil
}

// stop stops the cluster at once; it is called on every exit path.
func (c *pgCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.run(ctx, "pg_ctl", "-D", c.dir, "-m", "immediate", "-w", "stop")
}

// stopLeftovers stops clusters that a killed earlier run left under root
// (their postmaster.pid is still there, the run's owner.pid names a dead
// process) and removes their directories.
func stopLeftovers(root string, log func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(root, "run-*"))
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "owner.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && alive(pid) {
				continue // another run, still going
			}
		}
		pidFile := filepath.Join(d, "pg", "postmaster.pid")
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil {
				if p, err := os.FindProcess(pid); err == nil && alive(pid) {
					log("stopping a cluster left by an earlier run (pid %d, %s)", pid, d)
					p.Signal(syscall.SIGQUIT)
					for i := 0; i < 100 && p.Signal(syscall.Signal(0)) == nil; i++ {
						time.Sleep(100 * time.Millisecond)
					}
				}
			}
		}
		os.RemoveAll(d)
	}
}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
