package db_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestPrecheckCarrier: a context's token check rides with the first
// statement a Carrier sends (one round trip for both), a refused check
// lets nothing of that statement commit and stops every later statement
// before it is sent, and a statement that asked for a custom plan is
// planned as one in the carrying batch. A database of its own: the
// statements commit.
func TestPrecheckCarrier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.New(t)
	cfg := base.Config().Copy()
	cfg.MaxConns = 1
	counter := &db.StatementCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	carrier := db.Carrying(pool)

	hash := sha256.Sum256([]byte("secret"))
	var token uuid.UUID
	if err := base.QueryRow(ctx, "INSERT INTO tokens (name, role, secret_hash) VALUES ('t', 'admin', $1) RETURNING id", hash[:]).Scan(&token); err != nil {
		t.Fatal(err)
	}
	check := func() context.Context {
		return db.WithPrecheck(ctx, db.NewPrecheck("SELECT token_still_valid($1, $2, $3, $4, $5)", token, hash[:], "t", "admin", (*uuid.UUID)(nil)))
	}
	projects := func(t *testing.T, name string) int {
		t.Helper()
		var n int
		if err := base.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Warm the connection's statement cache, so that only round trips of
	// the steps themselves are counted.
	for _, name := range []string{"warm-1", "warm-2"} {
		if _, err := carrier.Exec(check(), "INSERT INTO projects (name) VALUES ($1)", name); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("OK", func(t *testing.T) {
		cctx := check()
		_, trips0 := counter.Counts()
		if _, err := carrier.Exec(cctx, "INSERT INTO projects (name) VALUES ($1)", "carried"); err != nil {
			t.Fatal(err)
		}
		stmts1, trips1 := counter.Counts()
		if trips1-trips0 != 1 {
			t.Errorf("the check and the statement took %d round trips, want 1", trips1-trips0)
		}
		if judged, verdict := db.PrecheckFrom(cctx).Verdict(); !judged || verdict != nil {
			t.Errorf("after the carrying statement: judged %v, verdict %v; want judged, passed", judged, verdict)
		}
		// Judged: the next statement goes alone, without the check.
		var n int
		if err := carrier.QueryRow(cctx, "SELECT count(*) FROM projects WHERE name = $1", "carried").Scan(&n); err != nil || n != 1 {
			t.Fatalf("read back %d rows, %v; want 1", n, err)
		}
		if stmts2, trips2 := counter.Counts(); stmts2-stmts1 != 1 || trips2-trips1 != 1 {
			t.Errorf("a statement after the verdict: %d statements in %d round trips, want 1 in 1", stmts2-stmts1, trips2-trips1)
		}
	})

	t.Run("ErrRevoked", func(t *testing.T) {
		if _, err := base.Exec(ctx, "UPDATE tokens SET revoked_at = now() WHERE id = $1", token); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { base.Exec(ctx, "UPDATE tokens SET revoked_at = NULL WHERE id = $1", token) })
		cctx := check()
		_, err := carrier.Exec(cctx, "INSERT INTO projects (name) VALUES ($1)", "refused")
		if !errors.Is(err, wgerr.Unauthenticated) || !db.PrecheckRefused(err) {
			t.Fatalf("a statement carrying the check of a revoked token: %v, want the check's refusal (unauthenticated)", err)
		}
		if n := projects(t, "refused"); n != 0 {
			t.Errorf("the refused batch committed its statement (%d rows)", n)
		}
		_, trips0 := counter.Counts()
		_, err = carrier.Exec(cctx, "INSERT INTO projects (name) VALUES ($1)", "after-refusal")
		if !errors.Is(err, wgerr.Unauthenticated) {
			t.Errorf("a later statement of the refused request: %v, want unauthenticated", err)
		}
		b := &pgx.Batch{}
		b.Queue("INSERT INTO projects (name) VALUES ($1)", "after-refusal")
		if err := carrier.SendBatch(cctx, b).Close(); !errors.Is(err, wgerr.Unauthenticated) {
			t.Errorf("a later batch of the refused request: %v, want unauthenticated", err)
		}
		if _, trips1 := counter.Counts(); trips1 != trips0 {
			t.Errorf("the refused request sent %d more round trips, want none", trips1-trips0)
		}
		if n := projects(t, "after-refusal"); n != 0 {
			t.Errorf("a statement after the refusal committed (%d rows)", n)
		}
	})

	t.Run("SettledAlone", func(t *testing.T) {
		// SettlePrechecks through the Carrier: the check alone, in one
		// round trip, then nothing; a refused check is the answer.
		cctx := check()
		_, trips0 := counter.Counts()
		if err := db.SettlePrechecks(cctx, carrier); err != nil {
			t.Fatal(err)
		}
		if err := db.SettlePrechecks(cctx, carrier); err != nil {
			t.Fatal(err)
		}
		if _, trips1 := counter.Counts(); trips1-trips0 != 1 {
			t.Errorf("settling the check twice took %d round trips, want 1", trips1-trips0)
		}
		if judged, verdict := db.PrecheckFrom(cctx).Verdict(); !judged || verdict != nil {
			t.Errorf("judged %v, verdict %v; want judged, passed", judged, verdict)
		}
		if _, err := base.Exec(ctx, "UPDATE tokens SET revoked_at = now() WHERE id = $1", token); err != nil {
			t.Fatal(err)
		}
		defer base.Exec(ctx, "UPDATE tokens SET revoked_at = NULL WHERE id = $1", token)
		if err := db.SettlePrechecks(check(), carrier); !errors.Is(err, wgerr.Unauthenticated) || !db.PrecheckRefused(err) {
			t.Errorf("settling the check of a revoked token: %v, want the check's refusal (unauthenticated)", err)
		}
	})

	t.Run("BatchGetsTheCheckAtItsHead", func(t *testing.T) {
		cctx := check()
		b := &pgx.Batch{}
		b.Queue("INSERT INTO projects (name) VALUES ($1)", "batched")
		_, trips0 := counter.Counts()
		if err := carrier.SendBatch(cctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		if _, trips1 := counter.Counts(); trips1-trips0 != 1 {
			t.Errorf("a carried batch took %d round trips, want 1", trips1-trips0)
		}
		if judged, verdict := db.PrecheckFrom(cctx).Verdict(); !judged || verdict != nil {
			t.Errorf("judged %v, verdict %v; want judged, passed", judged, verdict)
		}
	})

	t.Run("AddedCheckRefusedAlone", func(t *testing.T) {
		// A check added after the token's (an Idempotency-Key record's
		// begin) rides in the same round trip; its refusal is the
		// request's, while the token's check keeps its own pass.
		tokenCtx := check()
		cctx, err := db.AddPrecheck(tokenCtx, func(q db.DBTX) error {
			_, err := q.Exec(ctx, "SELECT request_precondition(false, 'idempotency_taken', 'held')")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		_, trips0 := counter.Counts()
		_, err = carrier.Exec(cctx, "INSERT INTO projects (name) VALUES ($1)", "added-refused")
		if db.PrecheckRefusal(err) != "idempotency_taken" || !errors.Is(err, wgerr.InProgress) {
			t.Fatalf("a statement carrying a refused added check: %v, want its refusal (request_in_progress)", err)
		}
		if _, trips1 := counter.Counts(); trips1-trips0 != 1 {
			t.Errorf("both checks and the statement took %d round trips, want 1", trips1-trips0)
		}
		if n := projects(t, "added-refused"); n != 0 {
			t.Errorf("the refused batch committed its statement")
		}
		if judged, verdict := db.PrecheckFrom(tokenCtx).Verdict(); !judged || verdict != nil {
			t.Errorf("the token's check: judged %v, verdict %v; want judged, passed", judged, verdict)
		}
		if _, err := carrier.Exec(tokenCtx, "INSERT INTO projects (name) VALUES ($1)", "added-after"); err != nil {
			t.Errorf("a statement with the token's check alone after the added one's refusal: %v", err)
		}
	})

	t.Run("CustomPlan", func(t *testing.T) {
		var mode string
		if err := db.CustomPlan(carrier).QueryRow(check(), "SELECT current_setting('plan_cache_mode')").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "force_custom_plan" {
			t.Errorf("a CustomPlan statement carried with the check ran with plan_cache_mode %q, want force_custom_plan", mode)
		}
		// The setting ends with the batch's implicit transaction.
		if err := pool.QueryRow(ctx, "SELECT current_setting('plan_cache_mode')").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "auto" {
			t.Errorf("after the batch the connection's plan_cache_mode is %q, want auto", mode)
		}
	})
}
