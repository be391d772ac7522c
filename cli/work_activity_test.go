package cli

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runChild starts script under sh with its output counted by a, in dir,
// and stops it at the test's end.
func runChild(t *testing.T, a *activity, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = io.MultiWriter(io.Discard, a), a
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// waitMarker waits until the marker satisfies ok.
func waitMarker(t *testing.T, a *activity, ok func(output int64, files int) bool) json.RawMessage {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m := a.marker(nil)
		var v struct {
			Output int64 `json:"output_bytes"`
			Files  int   `json:"files_changed"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		if ok(v.Output, v.Files) {
			return m
		}
	}
	t.Fatalf("marker never got there: %s", a.marker(nil))
	return nil
}

// TestActivitySilentChild: a real child that writes, then goes silent
// while it keeps running, leaves the marker unchanged; one that keeps
// writing output or files moves it.
func TestActivitySilentChild(t *testing.T) {
	t.Parallel()
	t.Run("SilentStopsMoving", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a := newActivity(dir, time.Now().Add(-time.Millisecond))
		// It signals that it has gone silent by creating a file, then
		// sleeps.
		runChild(t, a, dir, `echo working; echo more >&2; : > silent; exec sleep 60`)
		first := waitMarker(t, a, func(out int64, files int) bool { return out == 13 && files == 1 })
		time.Sleep(300 * time.Millisecond)
		if again := a.marker(nil); string(again) != string(first) {
			t.Fatalf("a silent child's marker moved: %s then %s", first, again)
		}
	})
	t.Run("OutputMoves", func(t *testing.T) {
		t.Parallel()
		a := newActivity(t.TempDir(), time.Now())
		runChild(t, a, t.TempDir(), `while :; do echo tick; sleep 0.05; done`)
		first := waitMarker(t, a, func(out int64, _ int) bool { return out > 0 })
		waitMarker(t, a, func(out int64, _ int) bool { return out > 0 && string(a.marker(nil)) != string(first) })
	})
	t.Run("FilesMove", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "old"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(dir, "old"), old, old); err != nil {
			t.Fatal(err)
		}
		a := newActivity(dir, time.Now().Add(-time.Minute))
		runChild(t, a, dir, `i=0; while :; do i=$((i+1)); : > f$i; sleep 0.05; done`)
		waitMarker(t, a, func(out int64, files int) bool { return out == 0 && files >= 3 })
	})
	t.Run("SameFileMoves", func(t *testing.T) {
		// A child that keeps rewriting the same file (a coding agent
		// editing one source file, printing nothing until it ends) is
		// active: its marker moves though the count of changed files
		// stays at one.
		t.Parallel()
		dir := t.TempDir()
		a := newActivity(dir, time.Now())
		runChild(t, a, dir, `while :; do date +%s%N > edited; sleep 0.05; done`)
		first := waitMarker(t, a, func(out int64, files int) bool { return out == 0 && files == 1 })
		waitMarker(t, a, func(out int64, files int) bool {
			return out == 0 && files == 1 && string(a.marker(nil)) != string(first)
		})
	})
	t.Run("CoarseFileClock", func(t *testing.T) {
		// A file written right after the start can carry a modification
		// time a few milliseconds before it (the kernel's coarse clock):
		// it is a change all the same (this failed the suite once, as
		// SilentStopsMoving's files_changed 0).
		t.Parallel()
		dir := t.TempDir()
		start := time.Now()
		a := newActivity(dir, start)
		f := filepath.Join(dir, "early")
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		stamp := start.Add(-2 * time.Millisecond)
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			t.Fatal(err)
		}
		if n, _ := a.filesChanged(); n != 1 {
			t.Fatalf("files changed = %d, want 1 (a file stamped 2 ms before the start by the coarse clock)", n)
		}
	})
	t.Run("Reported", func(t *testing.T) {
		t.Parallel()
		a := newActivity("", time.Now())
		var v map[string]any
		if err := json.Unmarshal(a.marker(json.RawMessage(`"half way"`)), &v); err != nil || v["reported"] != "half way" {
			t.Fatalf("marker with a reported progress = %v (%v)", v, err)
		}
	})
}
