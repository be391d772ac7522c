package embedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ownerLockName is the owner lock file in DataDir: an flock(2) held, for its
// whole life, by the one process that owns the cluster (Config.Own). The
// kernel drops it when that process dies, however it dies, so a free lock
// beside a running server means the server was left behind by a dead owner.
// The file holds the owner's pid, for messages; the lock, not the file,
// decides.
const ownerLockName = "owner.lock"

// ownerWait is how long taking the owner lock retries before giving up: it
// covers a concurrent `workgraph db status`, which holds the lock for the
// instant of a probe; a live owner holds it far longer.
const ownerWait = 200 * time.Millisecond

// OwnedError is returned by Start with Config.Own, and by StopLeftover, when
// a live process owns the data directory.
type OwnedError struct {
	DataDir string
	// PID of the owning process; 0 when it has not recorded it yet.
	PID int
}

func (e *OwnedError) Error() string {
	who := "pid unknown"
	if e.PID > 0 {
		who = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("the embedded PostgreSQL data folder %s is in use by another workgraph process (%s), which stops the database when it exits",
		e.DataDir, who)
}

// ownerLock is a held owner lock.
type ownerLock struct {
	release func()
}

// takeOwner takes the owner lock of dataDir (which must exist) without
// waiting for a live owner, and records this process's pid in it. It
// returns an *OwnedError if another process holds it.
func takeOwner(ctx context.Context, dataDir string) (*ownerLock, error) {
	path := filepath.Join(dataDir, ownerLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedpg: open owner lock: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, ownerWait)
	defer cancel()
	for {
		held, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("embedpg: lock %s: %w", path, err)
		}
		if held {
			break
		}
		select {
		case <-wait.Done():
			f.Close()
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("embedpg: waiting for the owner lock %s: %w", path, err)
			}
			return nil, &OwnedError{DataDir: dataDir, PID: readOwnerPID(path)}
		case <-time.After(25 * time.Millisecond):
		}
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("embedpg: write owner lock: %w", err)
	}
	return &ownerLock{release: func() {
		// Clear the pid first: a reader never names a process that has
		// let go.
		_ = f.Truncate(0)
		unlock(f)
		_ = f.Close()
	}}, nil
}

// probeOwner reports whether a live process owns dataDir, and its pid (0
// if it has not recorded it yet). It holds the lock (shared) only for the
// instant of the probe.
func probeOwner(dataDir string) (owned bool, pid int, err error) {
	path := filepath.Join(dataDir, ownerLockName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	} else if err != nil {
		return false, 0, fmt.Errorf("embedpg: %w", err)
	}
	defer f.Close()
	free, err := tryLock(f, false)
	if err != nil {
		return false, 0, fmt.Errorf("embedpg: probe %s: %w", path, err)
	}
	if free {
		unlock(f)
		return false, 0, nil
	}
	return true, readOwnerPID(path), nil
}

func readOwnerPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// releaseOwner lets go of the owner lock, if held. Called with c.mu held or
// before c is shared.
func (c *Cluster) releaseOwner() {
	if c.owner != nil {
		c.owner.release()
		c.owner = nil
	}
}

// adoptOrStop decides about a running server found while this Cluster holds
// the owner lock, so left behind by a dead owner: it adopts the server
// (Stop will stop it) and returns true, or, when the server runs with other
// settings than startServer would give it, stops it and returns false so
// that Start starts it afresh. Called with the start lock held.
func (c *Cluster) adoptOrStop(ctx context.Context) (bool, error) {
	pid, _ := c.serverProcess()
	why, err := c.incompatible(ctx)
	if err != nil {
		return false, err
	}
	if why == "" {
		c.log.Info("adopting the PostgreSQL server left running by a previous owner", "pid", pid, "data_dir", c.dataDir)
		c.adopted = true
		return true, nil
	}
	c.log.Warn("restarting the PostgreSQL server left running by a previous owner", "pid", pid, "reason", why)
	if err := c.stopServer(ctx, "fast"); err != nil {
		return false, err
	}
	return false, nil
}

// adoptedSettings are the settings a running server must have for Start to
// adopt it: where it listens, and how durable it is.
var adoptedSettings = []string{"listen_addresses", "port", "unix_socket_directories", "fsync", "synchronous_commit", "full_page_writes"}

// incompatible returns why the running server cannot be adopted as it is,
// or "" if it can.
func (c *Cluster) incompatible(ctx context.Context) (string, error) {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return "", fmt.Errorf("embedpg: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	want := c.serverSettings()
	for _, name := range adoptedSettings {
		w, ok := want[name]
		if !ok {
			w = "on" // the durability settings' defaults
		}
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			return "", fmt.Errorf("embedpg: read setting %s: %w", name, err)
		}
		if got != w {
			return fmt.Sprintf("%s is %q, want %q", name, got, w), nil
		}
	}
	return "", nil
}

// Status describes the embedded cluster of a data directory, as `workgraph
// db status` shows it.
type Status struct {
	DataDir   string `json:"data_dir"`
	SocketDir string `json:"socket_dir"`
	LogFile   string `json:"log_file"`
	// Initialized: DataDir/data holds a cluster.
	Initialized bool `json:"initialized"`
	// Running: a postmaster for this data directory is alive.
	Running bool `json:"running"`
	// PID of the postmaster; 0 when none runs.
	PID int `json:"pid"`
	// Owned: a live process holds the owner lock (Config.Own); OwnerPID is
	// its pid, 0 when none or not recorded yet.
	Owned    bool `json:"owned"`
	OwnerPID int  `json:"owner_pid"`
	// Version is the cluster's major version (PG_VERSION), ServerVersion
	// the running server's full version; each "" when unknown.
	Version       string `json:"version"`
	ServerVersion string `json:"server_version,omitempty"`
	// SizeBytes is the disk space of the files under DataDir.
	SizeBytes int64 `json:"size_bytes"`
}

// Inspect reports the state of cfg.DataDir's cluster without changing
// anything; a DataDir that does not exist is reported as not initialized
// and not running. Only DataDir and Logger of cfg are used.
func Inspect(ctx context.Context, cfg Config) (Status, error) {
	c, err := layout(Config{DataDir: cfg.DataDir, Logger: cfg.Logger})
	if err != nil {
		return Status{}, err
	}
	st := Status{DataDir: c.dataDir, SocketDir: c.runDir, LogFile: c.logFile}
	if _, err := os.Stat(c.dataDir); errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if b, err := os.ReadFile(filepath.Join(c.pgData, "PG_VERSION")); err == nil {
		st.Initialized, st.Version = true, strings.TrimSpace(string(b))
	}
	if st.Owned, st.OwnerPID, err = probeOwner(c.dataDir); err != nil {
		return st, err
	}
	if st.PID, err = c.serverProcess(); err != nil {
		return st, err
	}
	st.Running = st.PID != 0
	if st.Running {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if conn, err := c.connect(ctx, "postgres"); err == nil {
			_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&st.ServerVersion)
			conn.Close(context.WithoutCancel(ctx))
		}
	}
	st.SizeBytes = dirSize(c.dataDir)
	return st, nil
}

// dirSize is the total size of the regular files under dir; files that
// vanish or cannot be read while it walks are skipped.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// StopLeftover stops the server of cfg.DataDir left running with no live
// owner, and reports whether one was running. When a live process owns the
// data directory it returns an *OwnedError and changes nothing, unless
// force is set: then it stops the server under its owner. While it stops,
// it holds the owner lock (unless forced), so no server adopts the cluster
// meanwhile. Only DataDir, BinDir and Logger of cfg are used.
func StopLeftover(ctx context.Context, cfg Config, force bool) (bool, error) {
	if !supported {
		return false, errors.New("embedpg: embedded PostgreSQL is only supported on unix-like systems")
	}
	c, err := layout(Config{DataDir: cfg.DataDir, Logger: cfg.Logger})
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(c.pgData); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if !force {
		owner, err := takeOwner(ctx, c.dataDir)
		if err != nil {
			return false, err
		}
		defer owner.release()
	}
	if pid, err := c.serverProcess(); err != nil || pid == 0 {
		return false, err
	}
	if c, err = newCluster(Config{DataDir: cfg.DataDir, BinDir: cfg.BinDir, Logger: cfg.Logger}); err != nil {
		return false, err
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = lookupSysUser(serverUser); err != nil {
			return false, fmt.Errorf("embedpg: look up user %q: %w", serverUser, err)
		}
	}
	unlock, err := lockFile(ctx, c.lockPath())
	if err != nil {
		return false, err
	}
	defer unlock()
	return true, c.stopServer(ctx, "fast")
}
