package embedpg

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestOwn(t *testing.T) {
	t.Parallel()
	requireBins(t)

	t.Run("ErrOwned", func(t *testing.T) {
		t.Parallel()
		ctx := ctxTimeout(t, 3*time.Minute)
		dir := clusterDir(t)
		c1, err := Start(ctx, Config{DataDir: dir, Fast: true, Own: true, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := c1.postmasterPID()

		// Another Start, even in this process (flock is per open file),
		// is refused and leaves the owner's server alone.
		_, err = Start(ctx, Config{DataDir: dir, Fast: true, Own: true})
		var owned *OwnedError
		if !errors.As(err, &owned) || owned.PID != os.Getpid() || owned.DataDir != dir {
			t.Fatalf("second Start: %v, want an *OwnedError naming pid %d and %s", err, os.Getpid(), dir)
		}
		if _, err := StopLeftover(ctx, Config{DataDir: dir}, false); !errors.As(err, &owned) {
			t.Fatalf("StopLeftover under a live owner: %v, want an *OwnedError", err)
		}
		if !processAlive(pid) {
			t.Fatal("the refused calls stopped the owner's server")
		}
		st, err := Inspect(ctx, Config{DataDir: dir})
		if err != nil || !st.Running || st.PID != pid || !st.Owned || st.OwnerPID != os.Getpid() {
			t.Fatalf("Inspect = %+v, %v", st, err)
		}
		// A guest (JoinOwner) uses the owner's server and leaves it running.
		guest, err := Start(ctx, Config{DataDir: dir, Database: "guest", Own: true, JoinOwner: true})
		if err != nil {
			t.Fatalf("Start as a guest: %v", err)
		}
		connect(t, ctx, guest.URL("guest")).Close(ctx)
		if err := guest.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if now, _ := c1.postmasterPID(); now != pid || !processAlive(pid) {
			t.Fatal("the guest's Stop stopped the owner's server")
		}

		if err := c1.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := Inspect(ctx, Config{DataDir: dir}); err != nil || st.Running || st.Owned {
			t.Fatalf("Inspect after Stop = %+v, %v", st, err)
		}
		// Stop released the lock; a JoinOwner Start with no owner owns.
		c2, err := Start(ctx, Config{DataDir: dir, Fast: true, Own: true, JoinOwner: true})
		if err != nil {
			t.Fatalf("Start after the owner stopped: %v", err)
		}
		if st, err := Inspect(ctx, Config{DataDir: dir}); err != nil || !st.Owned || c2.Reused() {
			t.Fatalf("Inspect = %+v, %v; reused %v", st, err, c2.Reused())
		}
		if err := c2.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := Inspect(ctx, Config{DataDir: dir}); err != nil || st.Running {
			t.Fatalf("Inspect after the second owner stopped = %+v, %v", st, err)
		}
	})

	// A server found running with the lock free was left by a dead owner:
	// adopted when it runs as Start would run it, and stopped by Stop.
	t.Run("OKAdoptLeftover", func(t *testing.T) {
		t.Parallel()
		ctx := ctxTimeout(t, 3*time.Minute)
		dir := clusterDir(t)
		left, err := Start(ctx, Config{DataDir: dir, Fast: true})
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := left.postmasterPID()
		c, err := Start(ctx, Config{DataDir: dir, Fast: true, Own: true, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if now, _ := c.postmasterPID(); now != pid || !c.Reused() {
			t.Fatalf("postmaster %d (reused %v), want %d adopted", now, c.Reused(), pid)
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if processAlive(pid) {
			t.Fatal("Stop left the adopted server running")
		}
	})

	// A leftover running with other durability settings is restarted with
	// the owner's.
	t.Run("OKRestartIncompatibleLeftover", func(t *testing.T) {
		t.Parallel()
		ctx := ctxTimeout(t, 3*time.Minute)
		dir := clusterDir(t)
		left, err := Start(ctx, Config{DataDir: dir, Fast: true})
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := left.postmasterPID()
		c, err := Start(ctx, Config{DataDir: dir, Own: true, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Stop(ctx) })
		if processAlive(pid) {
			t.Fatalf("the leftover server %d (fsync=off) is still running", pid)
		}
		conn := connect(t, ctx, c.URL("postgres"))
		if got := queryString(t, ctx, conn, "SHOW fsync"); got != "on" {
			t.Errorf("fsync = %q after the restart, want on", got)
		}
		if c.Reused() {
			t.Error("Reused() = true for a restarted server")
		}
	})

	t.Run("OKStopLeftover", func(t *testing.T) {
		t.Parallel()
		ctx := ctxTimeout(t, 3*time.Minute)
		dir := testDataDir(t)
		if stopped, err := StopLeftover(ctx, Config{DataDir: dir}, false); err != nil || stopped {
			t.Fatalf("StopLeftover of an empty folder = %v, %v", stopped, err)
		}
		copyTemplate(t, dir)
		left, err := Start(ctx, Config{DataDir: dir, Fast: true})
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := left.postmasterPID()
		st, err := Inspect(ctx, Config{DataDir: dir})
		if err != nil || !st.Running || st.Owned || st.PID != pid || st.Version == "" || st.ServerVersion == "" || st.SizeBytes == 0 {
			t.Fatalf("Inspect of a leftover = %+v, %v", st, err)
		}
		if stopped, err := StopLeftover(ctx, Config{DataDir: dir}, false); err != nil || !stopped {
			t.Fatalf("StopLeftover = %v, %v", stopped, err)
		}
		if processAlive(pid) {
			t.Fatal("StopLeftover left the server running")
		}
	})
}
