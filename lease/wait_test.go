package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

func startNotifier(t *testing.T, f fixture) *lease.Notifier {
	t.Helper()
	n := lease.NewNotifier(f.pool, nil)
	n.TestSignals.Listening.Init()
	n.Start(context.Background())
	t.Cleanup(n.Stop)
	n.TestSignals.Listening.Wait(t)
	select {
	case <-n.Listening():
	default:
		t.Fatal("Listening is not closed after the first LISTEN")
	}
	return n
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no signal: %s", what)
	}
}

func TestNotifier(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // LISTENs; claims wait concurrently
	n := startNotifier(t, f)
	ch, unsubscribe := n.Subscribe(f.project)
	defer unsubscribe()
	other, _ := n.Subscribe(f.project)
	drain(ch)

	t.Run("ItemBecomesReady", func(t *testing.T) {
		f.item(t, graph.NewItem{})
		waitSignal(t, ch, "a ready item was created")
		waitSignal(t, other, "second subscriber")
	})
	t.Run("Reconnects", func(t *testing.T) {
		var killed int
		err := f.conn.QueryRow(f.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN%'`).Scan(&killed)
		if err != nil || killed != 1 {
			t.Fatalf("terminated %d listeners (%v)", killed, err)
		}
		// After the reconnect every subscriber is woken (notifications may
		// have been lost); then new notifications arrive again.
		n.TestSignals.Listening.Wait(t)
		waitSignal(t, ch, "wake-up after reconnect")
		drain(ch)
		f.item(t, graph.NewItem{})
		waitSignal(t, ch, "notification after reconnect")
	})
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestClaimWait(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{WaitRecheck: time.Hour}) // LISTENs; claims wait concurrently
	n := startNotifier(t, f)

	t.Run("ErrNothingReadyAfterWait", func(t *testing.T) {
		_, err := f.leases.ClaimWait(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 50*time.Millisecond, n)
		if !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("err = %v, want ErrNothingReady", err)
		}
	})
	t.Run("WokenByNotification", func(t *testing.T) {
		type result struct {
			c   lease.Claim
			err error
		}
		done := make(chan result, 1)
		go func() {
			c, err := f.leases.ClaimWait(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, time.Minute, n)
			done <- result{c, err}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for n.Subscribers(f.project) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("ClaimWait did not subscribe")
			}
			time.Sleep(5 * time.Millisecond)
		}
		it := f.item(t, graph.NewItem{})
		select {
		case r := <-done:
			if r.err != nil || r.c.Item.ID != it.ID {
				t.Fatalf("ClaimWait = %v, %v", r.c.Item.ID, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("ClaimWait was not woken by the notification")
		}
	})
	t.Run("ContextCancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(f.ctx)
		cancel()
		_, err := f.leases.ClaimWait(ctx, f.project, lease.ClaimRequest{Worker: "w"}, time.Minute, n)
		if err == nil || errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("err = %v, want the cancellation", err)
		}
	})
}
