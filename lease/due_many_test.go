package lease_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/lease"
)

// TestWakeManyDueAtOnce: more items come out of their backoff at one
// instant than one read of the next time gates returns (32), each with a
// label of its own, and for each a claim waits that asks for its label
// (so a woken claim cannot take another's item and hand its wake-up on):
// each is granted its item at the instant, none is left to the periodic
// recheck (a minute away, past the waits).
func TestWakeManyDueAtOnce(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	n := startWaitNotifier(t, f)
	const many = 34
	if _, err := f.pool.Exec(f.ctx, `
		INSERT INTO items (project_id, title, created_by, labels, failures, not_before, in_backoff)
		SELECT $1, 'due ' || g, 'test', ARRAY['k' || g], 1, now() + interval '3 seconds', true
		FROM generate_series(1, $2::int) AS g`, f.project, many); err != nil {
		t.Fatal(err)
	}
	outs := make([]<-chan waitResult, many)
	for i := range outs {
		outs[i] = waitFor(f, leases, n, lease.ClaimRequest{Worker: fmt.Sprintf("w%d", i+1), Labels: []string{fmt.Sprintf("k%d", i+1)}})
	}
	granted := map[uuid.UUID]string{}
	for _, out := range outs {
		r := <-out
		if r.err != nil {
			t.Errorf("%s: waiting claim = %v; want an item at the instant (%d items due at once)", r.worker, r.err, many)
			continue
		}
		if other, ok := granted[r.c.Item.ID]; ok {
			t.Errorf("%s and %s were both granted %v", r.worker, other, r.c.Item.ID)
		}
		granted[r.c.Item.ID] = r.worker
	}
	t.Logf("%+v", n.Stats())
	if s := n.Stats(); s.DueWakes == 0 {
		t.Errorf("no due wake-up: %+v", s)
	}
}

// TestDueWakeAfterStopReadsNothing: a time gate's instant that comes
// after the notifier stopped (its pool then closed, as a server shuts
// down) still turns its items into events, but reads no next gates: a
// read then would run on a closed pool and log a warning.
func TestDueWakeAfterStopReadsNothing(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	pool, err := pgxpool.NewWithConfig(f.ctx, f.pool.Config().Copy())
	if err != nil {
		t.Fatal(err)
	}
	var logged lockedBuffer
	n := lease.NewNotifier(pool, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
	n.TestSignals.Listening.Init()
	n.TestSignals.Idle.Init()
	n.TestSignals.Notified.Init()
	n.TestSignals.Due.Init()
	n.TestSignals.Probed.Init()
	n.Start(context.Background())
	n.TestSignals.Listening.Wait(t)
	var id uuid.UUID
	if err := f.pool.QueryRow(f.ctx, `
		INSERT INTO items (project_id, title, created_by, failures, not_before, in_backoff)
		VALUES ($1, 'due', 'test', 1, clock_timestamp() + interval '2 seconds', true) RETURNING id`, f.project).Scan(&id); err != nil {
		t.Fatal(err)
	}
	notified(t, n, 1) // the item's creation
	out := waitFor(f, leases, n, lease.ClaimRequest{Worker: "w1"})
	n.TestSignals.Idle.Wait(t)
	n.TestSignals.Probed.Wait(t) // the waiter's own read, which set the timer
	n.Stop()
	pool.Close()
	mustGrant(t, <-out, id)
	n.TestSignals.Due.Wait(t)
	n.TestSignals.Probed.Wait(t)
	if s := logged.String(); strings.Contains(s, "time gates") {
		t.Errorf("the notifier logged after it stopped:\n%s", s)
	}
}

// lockedBuffer is a bytes.Buffer that a logger and a test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
