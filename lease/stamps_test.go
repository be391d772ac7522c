package lease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// dbClock is a fixture whose services run on the database clock (nil
// "now"), the production path, instead of the stub.
func dbClock(t *testing.T) fixture {
	t.Helper()
	// Its own database: these tests commit, and race transactions of
	// several sessions.
	f := setupDB(t, lease.Config{})
	f.leases = lease.NewService(f.conn, clock.Database{}, f.cfg)
	f.graph = graph.NewService(f.conn, clock.Database{})
	return f
}

// lateTx begins a transaction that has been open a while (50 ms of
// pg_sleep) when fn runs its statements in it: the latency of a slow link
// or a loaded server between a transaction's start and its writes. It
// returns the database clock read in the transaction just before fn.
func lateTx(t *testing.T, f fixture, fn func(tx pgx.Tx, before time.Time)) {
	t.Helper()
	tx, err := f.conn.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(f.ctx))
	if _, err := tx.Exec(f.ctx, "SELECT pg_sleep(0.05)"); err != nil {
		t.Fatal(err)
	}
	var before time.Time
	if err := tx.QueryRow(f.ctx, "SELECT clock_timestamp()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	fn(tx, before)
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStampsAreTheStatementsNotTheTransactions checks, on the database
// clock, that the statements that stamp lease times take the instant they
// write, not their transaction's start (now()), which under latency may be
// long past: a claim stamped at its transaction's start overlaps the lease
// a concurrent release ended after that start, and hands out a lease that
// may already have expired.
func TestStampsAreTheStatementsNotTheTransactions(t *testing.T) {
	t.Parallel()
	q := dbq.New()

	t.Run("ClaimAfterRelease", func(t *testing.T) {
		t.Parallel()
		f := dbClock(t)
		it, first := f.claimNew(t, "w1")
		tx, err := f.conn.Begin(f.ctx) // the claim's transaction starts...
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.WithoutCancel(f.ctx))
		if _, err := tx.Exec(f.ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		// ...then the holder releases the item...
		released, err := f.leases.Release(f.ctx, f.project, fence(first), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(f.ctx, "SELECT pg_sleep(0.05)"); err != nil {
			t.Fatal(err)
		}
		var before time.Time
		if err := tx.QueryRow(f.ctx, "SELECT clock_timestamp()").Scan(&before); err != nil {
			t.Fatal(err)
		}
		// ...and the claim's statement takes the freed item, 20 ms TTL.
		row, err := q.ClaimItem(f.ctx, tx, dbq.ClaimItemParams{
			ProjectID: f.project, Labels: it.Labels, Worker: "w2", LeaseID: uuid.New(),
			Principal: "w2", TtlMs: 20,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
		got := row.Lease
		if got.AcquiredAt.Before(*released.EndedAt) {
			t.Errorf("acquired_at %v is before the previous lease ended (%v): the leases overlap",
				got.AcquiredAt, *released.EndedAt)
		}
		if got.AcquiredAt.Before(before) {
			t.Errorf("acquired_at %v is before the claim's statement ran (%v)", got.AcquiredAt, before)
		}
		if !got.ExpiresAt.After(before) {
			t.Errorf("granted already expired: expires_at %v, the statement ran at %v", got.ExpiresAt, before)
		}
		if d := got.ExpiresAt.Sub(got.AcquiredAt); d != 20*time.Millisecond {
			t.Errorf("expires_at - acquired_at = %v, want the 20ms asked for", d)
		}
	})

	t.Run("Heartbeat", func(t *testing.T) {
		t.Parallel()
		f := dbClock(t)
		_, l := f.claimNew(t, "w")
		lateTx(t, f, func(tx pgx.Tx, before time.Time) {
			row, err := q.HeartbeatLease(f.ctx, tx, dbq.HeartbeatLeaseParams{
				ProjectID: f.project, LeaseID: l.ID, Epoch: l.Epoch, TtlMs: 30_000,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := row.Lease
			if got.HeartbeatAt == nil || got.HeartbeatAt.Before(before) {
				t.Errorf("heartbeat_at %v is before the statement ran (%v)", got.HeartbeatAt, before)
			} else if d := got.ExpiresAt.Sub(*got.HeartbeatAt); d != 30*time.Second {
				t.Errorf("expires_at - heartbeat_at = %v, want 30s", d)
			}
		})
	})

	t.Run("EndAfterHeartbeat", func(t *testing.T) {
		t.Parallel()
		f := dbClock(t)
		_, l := f.claimNew(t, "w")
		tx, err := f.conn.Begin(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.WithoutCancel(f.ctx))
		if _, err := tx.Exec(f.ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		hb, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
		if err != nil {
			t.Fatal(err)
		}
		outcome := string(lease.OutcomeReleased)
		row, err := q.EndLease(f.ctx, tx, dbq.EndLeaseParams{
			Outcome: &outcome, ProjectID: f.project, LeaseID: l.ID, Epoch: l.Epoch,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
		if row.EndedAt.Before(*hb.Lease.HeartbeatAt) {
			t.Errorf("ended_at %v is before the lease's last heartbeat (%v)", *row.EndedAt, *hb.Lease.HeartbeatAt)
		}
	})

	t.Run("RequestAfterTheLeaseEnded", func(t *testing.T) {
		// Fail's repeated_failure request (and the reaper's repeated_expiry
		// one) is opened after the lease ended, in the same transaction.
		t.Parallel()
		f := dbClock(t)
		it, l := f.claimNew(t, "w")
		lateTx(t, f, func(tx pgx.Tx, before time.Time) {
			outcome := string(lease.OutcomeFailed)
			row, err := q.EndLease(f.ctx, tx, dbq.EndLeaseParams{
				Outcome: &outcome, ProjectID: f.project, LeaseID: l.ID, Epoch: l.Epoch, Failed: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			req, err := attention.NewService(tx, clock.Database{}, attention.Config{}).Open(f.ctx, f.project, it.ID, attention.NewRequest{
				Question: "failed", Blocking: true, Source: attention.SourceSystem,
				Reason: attention.ReasonRepeatedFailure, RequestedBy: "system",
			})
			if err != nil {
				t.Fatal(err)
			}
			if req.CreatedAt.Before(*row.EndedAt) {
				t.Errorf("the request about the ended lease was created at %v, before the lease ended (%v)",
					req.CreatedAt, *row.EndedAt)
			}
		})
	})

	t.Run("ContinuityWindow", func(t *testing.T) {
		t.Parallel()
		f := dbClock(t)
		it, l := f.claimNew(t, "w")
		asked, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{Question: "q?", Blocking: true})
		if err != nil {
			t.Fatal(err)
		}
		const window = time.Minute
		lateTx(t, f, func(tx pgx.Tx, before time.Time) {
			by := "alice"
			if _, err := q.CloseAttention(f.ctx, tx, dbq.CloseAttentionParams{
				ProjectID: f.project, ID: asked.Request.ID, State: "resolved", Answer: &by, ResolvedBy: &by,
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := q.ReleaseItemFromAttention(f.ctx, tx, dbq.ReleaseItemFromAttentionParams{
				ProjectID: f.project, ItemID: it.ID, WindowMs: window.Milliseconds(),
			}); err != nil {
				t.Fatal(err)
			}
			var until time.Time
			if err := tx.QueryRow(f.ctx, "SELECT preferred_until FROM items WHERE project_id = $1 AND id = $2",
				f.project, it.ID).Scan(&until); err != nil {
				t.Fatal(err)
			}
			if until.Before(before.Add(window)) {
				t.Errorf("the continuity window ends at %v, %v after the resolution (want at least %v)",
					until, until.Sub(before), window)
			}
		})
	})

	t.Run("EndWaitingOnAHeartbeat", func(t *testing.T) {
		// An end that read its clock, then waited for the lease's row while a
		// heartbeat renewed it, still ends it after that heartbeat.
		t.Parallel()
		f := dbClock(t)
		_, l := f.claimNew(t, "w")
		hbTx, err := f.conn.Begin(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer hbTx.Rollback(context.WithoutCancel(f.ctx))
		if _, err := hbTx.Exec(f.ctx, "SELECT 1 FROM leases WHERE project_id = $1 AND id = $2 FOR UPDATE",
			f.project, l.ID); err != nil {
			t.Fatal(err)
		}
		conn, err := f.pool.Acquire(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		pid := conn.Conn().PgConn().PID()
		done := make(chan dbq.EndLeaseRow, 1)
		go func() {
			outcome := string(lease.OutcomeReleased)
			row, err := q.EndLease(f.ctx, conn, dbq.EndLeaseParams{
				Outcome: &outcome, ProjectID: f.project, LeaseID: l.ID, Epoch: l.Epoch,
			})
			if err != nil {
				t.Error(err)
			}
			done <- row
		}()
		for waiting := false; !waiting; {
			if err := f.conn.QueryRow(f.ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1",
				pid).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
		hb, err := q.HeartbeatLease(f.ctx, hbTx, dbq.HeartbeatLeaseParams{
			ProjectID: f.project, LeaseID: l.ID, Epoch: l.Epoch,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := hbTx.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
		row := <-done
		if row.EndedAt == nil || row.EndedAt.Before(*hb.Lease.HeartbeatAt) {
			t.Errorf("ended_at %v is before the heartbeat it waited for (%v)", row.EndedAt, *hb.Lease.HeartbeatAt)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		f := dbClock(t)
		it, _ := f.claimNew(t, "w")
		lateTx(t, f, func(tx pgx.Tx, before time.Time) {
			if _, err := q.EndLeasesCancelled(f.ctx, tx, dbq.EndLeasesCancelledParams{
				By: "alice", Reason: "r", ProjectID: f.project, ItemIds: []uuid.UUID{it.ID},
			}); err != nil {
				t.Fatal(err)
			}
			var ended time.Time
			if err := tx.QueryRow(f.ctx, "SELECT ended_at FROM leases WHERE project_id = $1 AND item_id = $2",
				f.project, it.ID).Scan(&ended); err != nil {
				t.Fatal(err)
			}
			if ended.Before(before) {
				t.Errorf("ended_at %v is before the cancel's statement ran (%v)", ended, before)
			}
		})
	})
}

// TestClaimReleaseRaceLeavesNoOverlap races claimers that release at once
// against each other on the database clock, and checks the stored history:
// by their timestamps two leases of one item never overlap, and every lease
// lasted its TTL from its grant.
func TestClaimReleaseRaceLeavesNoOverlap(t *testing.T) {
	t.Parallel()
	f := dbClock(t)
	f.items(t, 4)
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for r := 0; r < rounds; r++ {
				c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
				if errors.Is(err, lease.ErrNothingReady) {
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), ""); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var leases, overlaps, wrongTTL, endedOutside int
	err := f.conn.QueryRow(f.ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE prev_end > acquired_at),
		       count(*) FILTER (WHERE expires_at - acquired_at <> $2::interval),
		       count(*) FILTER (WHERE ended_at < acquired_at OR ended_at > expires_at)
		FROM (SELECT acquired_at, expires_at, ended_at,
		             lag(ended_at) OVER (PARTITION BY item_id ORDER BY epoch) AS prev_end
		      FROM leases WHERE project_id = $1) x`, f.project, ttl).Scan(&leases, &overlaps, &wrongTTL, &endedOutside)
	if err != nil {
		t.Fatal(err)
	}
	if leases < workers {
		t.Fatalf("only %d leases granted", leases)
	}
	if overlaps != 0 || wrongTTL != 0 || endedOutside != 0 {
		t.Errorf("of %d leases: %d overlap the item's previous lease, %d do not last their TTL, %d ended outside their grant",
			leases, overlaps, wrongTTL, endedOutside)
	}
	f.checkInvariants(t)
}

// TestRenewalsAndExpiriesLeaveNoOverlap races claimers on the database
// clock that release at once, renew then release, or abandon a short lease
// to expiry (ended by the next claims and a sweeper running alongside), and
// checks the stored history: by their timestamps two leases of one item
// never overlap, every lease lasts its TTL from its grant or its latest
// renewal, and none ends outside its grant.
func TestRenewalsAndExpiriesLeaveNoOverlap(t *testing.T) {
	t.Parallel()
	f := dbClock(t)
	const short = 50 * time.Millisecond
	f.cfg.MinTTL, f.cfg.MaxExpiries = short, 1_000_000
	f.leases = lease.NewService(f.conn, clock.Database{}, f.cfg)
	f.items(t, 4)
	const workers, rounds = 8, 60
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		w := lease.NewSweeper(f.leases, time.Hour, nil)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.RunOnce(f.ctx); err != nil {
				t.Errorf("sweep: %v", err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 13))
			worker := fmt.Sprintf("w%d", w)
			for r := 0; r < rounds; r++ {
				abandon := rng.IntN(4) == 0
				req := lease.ClaimRequest{Worker: worker}
				if abandon {
					req.TTL = short
				}
				c, err := f.leases.Claim(f.ctx, f.project, req)
				if errors.Is(err, lease.ErrNothingReady) {
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if abandon {
					continue
				}
				if rng.IntN(2) == 0 {
					if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(c.Lease), lease.Heartbeat{}); err != nil {
						t.Errorf("heartbeat: %v", err)
						return
					}
				}
				if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), ""); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-swept
	var leases, expired, overlaps, wrongTTL, endedOutside int
	err := f.conn.QueryRow(f.ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE outcome = 'expired'),
		       count(*) FILTER (WHERE prev_end > acquired_at),
		       count(*) FILTER (WHERE expires_at - coalesce(heartbeat_at, acquired_at) NOT IN ($2::interval, $3::interval)),
		       count(*) FILTER (WHERE ended_at < coalesce(heartbeat_at, acquired_at) OR ended_at > expires_at)
		FROM (SELECT acquired_at, heartbeat_at, expires_at, ended_at, outcome,
		             lag(ended_at) OVER (PARTITION BY item_id ORDER BY epoch) AS prev_end
		      FROM leases WHERE project_id = $1) x`, f.project, ttl, short).Scan(&leases, &expired, &overlaps, &wrongTTL, &endedOutside)
	if err != nil {
		t.Fatal(err)
	}
	if leases < workers {
		t.Fatalf("only %d leases granted", leases)
	}
	t.Logf("%d leases, %d expired", leases, expired)
	if overlaps != 0 || wrongTTL != 0 || endedOutside != 0 {
		t.Errorf("of %d leases: %d overlap the item's previous lease, %d do not last their TTL, %d ended outside their grant",
			leases, overlaps, wrongTTL, endedOutside)
	}
	f.checkInvariants(t)
}

// TestScopedClaimStampedOnceItsScopesAreHeld: a claim of an item with
// touches that waits for a scope lock (another claim of that resource is
// in flight, here a transaction holding the lock) records an acquired_at
// from after it got the lock, on both of the claim's paths. A stamp from
// before the wait would write a history where the lease held its scopes
// while an overlapping lease, ended during the wait, was still live.
func TestScopedClaimStampedOnceItsScopesAreHeld(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"OneStatement", "Transaction"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := dbClock(t)
			if path == "Transaction" {
				// A lease of the project past its expiry and not yet ended
				// sends the claim down its transactional path (the one
				// statement defers to it), which ends that lease first.
				old := f.item(t, graph.NewItem{})
				if _, err := dbq.New().ClaimItem(f.ctx, f.conn, dbq.ClaimItemParams{
					ProjectID: f.project, Labels: old.Labels, Worker: "gone", LeaseID: uuid.New(),
					Principal: "gone", TtlMs: 1,
				}); err != nil {
					t.Fatal(err)
				}
			}
			scoped := f.item(t, graph.NewItem{Priority: 10, Touches: []string{"r:a/**"}})

			// The scope lock of resource r, exclusive, as a claim of a
			// scope "r" in flight takes it (wg_lock_scopes, migration 00041).
			holder, err := f.pool.Begin(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback(context.WithoutCancel(f.ctx))
			if _, err := holder.Exec(f.ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':r', 7250019))`,
				f.project.String()); err != nil {
				t.Fatal(err)
			}

			type result struct {
				c   lease.Claim
				err error
			}
			done := make(chan result, 1)
			go func() {
				c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Principal: "w"})
				done <- result{c, err}
			}()
			// Wait (for an event, not a time) until the claim waits for the lock.
			for waiting := false; !waiting; {
				select {
				case r := <-done:
					t.Fatalf("the claim returned while the scope lock was held: %+v, %v", r.c.Lease, r.err)
				default:
				}
				if err := f.pool.QueryRow(f.ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
					WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).
					Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if !waiting {
					time.Sleep(5 * time.Millisecond) // polling for the wait; nothing is timed
				}
			}
			var freed time.Time
			if err := holder.QueryRow(f.ctx, "SELECT clock_timestamp()").Scan(&freed); err != nil {
				t.Fatal(err)
			}
			if err := holder.Commit(f.ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := r.c.Lease
			if got.ItemID != scoped.ID {
				t.Fatalf("claimed item %v, want the scoped item %v", got.ItemID, scoped.ID)
			}
			if got.AcquiredAt.Before(freed) {
				t.Errorf("acquired_at %v is before the claim got its scope lock (freed at %v)", got.AcquiredAt, freed)
			}
			if d := got.ExpiresAt.Sub(got.AcquiredAt); d != ttl {
				t.Errorf("expires_at - acquired_at = %v, want %v", d, ttl)
			}
		})
	}
}
