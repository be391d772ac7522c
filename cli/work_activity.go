package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// activityScanLimit bounds how many entries of the working folder one
// heartbeat looks at; .git folders are not looked into.
const activityScanLimit = 20000

// activity measures what the command really does, for the progress marker
// of its heartbeats: the bytes it wrote to its output (stdout and stderr,
// counted as they pass) and the files of its working folder changed since
// it started, with the newest of their modification times (so a command
// that keeps rewriting the same file moves the marker too). A command
// that loops without writing anything, or is wedged,
// leaves the marker as it was, so its lease turns quiet on the server
// (and, with the project's no-progress policy, is ended) however steadily
// the supervisor heartbeats.
type activity struct {
	written atomic.Int64
	dir     string
	since   time.Time
}

// mtimeSlack is how far before since a file's modification time may lie
// and still count as changed after since: the kernel stamps files from a
// coarse clock, up to one tick (10 ms at HZ=100) behind the clock
// time.Now reads, so a file the command writes at once can carry a time
// before its start.
const mtimeSlack = 20 * time.Millisecond

func newActivity(dir string, since time.Time) *activity {
	return &activity{dir: dir, since: since.Add(-mtimeSlack)}
}

// Write counts output bytes; it never fails.
func (a *activity) Write(p []byte) (int, error) {
	a.written.Add(int64(len(p)))
	return len(p), nil
}

// filesChanged counts the regular files of the working folder modified
// after the command started (at most activityScanLimit entries looked at),
// and returns the newest of their modification times (zero when none).
func (a *activity) filesChanged() (int, time.Time) {
	var newest time.Time
	if a.dir == "" {
		return 0, newest
	}
	n, seen := 0, 0
	_ = filepath.WalkDir(a.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > activityScanLimit {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != a.dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().After(a.since) {
			n++
			if info.ModTime().After(newest) {
				newest = info.ModTime()
			}
		}
		return nil
	})
	return n, newest
}

// marker is the progress to report: the command's activity, and what it
// wrote to its progress file (reported), if anything.
func (a *activity) marker(reported json.RawMessage) json.RawMessage {
	files, newest := a.filesChanged()
	m := map[string]any{"output_bytes": a.written.Load(), "files_changed": files}
	if files > 0 {
		m["last_file_change"] = newest.UTC().Format(time.RFC3339Nano)
	}
	if len(reported) > 0 {
		m["reported"] = reported
	}
	b, _ := json.Marshal(m)
	return b
}

// workingDir is the folder the command runs in (the supervisor's own).
func workingDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}
