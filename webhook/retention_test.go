package webhook_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

const day = 24 * time.Hour

// retentionSetup is a project with one webhook inside a rolled-back
// transaction.
type retentionSetup struct {
	tx      pgx.Tx
	project uuid.UUID
	hook    uuid.UUID
	now     time.Time
	seq     int64
}

func setupRetention(t *testing.T) *retentionSetup {
	t.Helper()
	tx := dbtest.TestTx(t)
	p := mustProject(t, tx)
	c, err := webhook.NewService(tx, nil, true).Create(context.Background(), p,
		webhook.New{URL: "http://127.0.0.1:1/hook", CreatedBy: "token:admin"})
	if err != nil {
		t.Fatal(err)
	}
	return &retentionSetup{tx: tx, project: p, hook: c.ID, now: time.Now()}
}

// addDeliveries writes n delivery records of state, made and (unless
// pending) finished age before now, each with one attempt.
func (s *retentionSetup) addDeliveries(t *testing.T, n int, state string, age time.Duration) {
	t.Helper()
	at := s.now.Add(-age)
	var finished *time.Time
	if state != webhook.StatePending {
		finished = &at
	}
	_, err := s.tx.Exec(context.Background(), `
		WITH d AS (
			INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, state, attempts, next_attempt_at, created_at, finished_at)
			SELECT $1, $2, $3 + g, 'item.created', $4, 1, $5, $5, $6 FROM generate_series(1, $7) AS g
			RETURNING project_id, webhook_id, seq
		)
		INSERT INTO webhook_attempts (project_id, webhook_id, seq, attempt, at, status, latency_ms)
		SELECT project_id, webhook_id, seq, 1, $5, 204, 3 FROM d`,
		s.project, s.hook, s.seq, state, at, finished, n)
	if err != nil {
		t.Fatal(err)
	}
	s.seq += int64(n)
}

// count is the number of delivery records (and attempts) of the project's
// webhook in state ("" any).
func (s *retentionSetup) count(t *testing.T, state string) (deliveries, attempts int) {
	t.Helper()
	err := s.tx.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM webhook_deliveries WHERE project_id = $1 AND ($2 = '' OR state = $2)),
		       (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d USING (project_id, webhook_id, seq)
		        WHERE a.project_id = $1 AND ($2 = '' OR d.state = $2))`, s.project, state).Scan(&deliveries, &attempts)
	if err != nil {
		t.Fatal(err)
	}
	return deliveries, attempts
}

func (s *retentionSetup) attemptsLeft(t *testing.T) int {
	t.Helper()
	var n int
	if err := s.tx.QueryRow(context.Background(), `SELECT count(*) FROM webhook_attempts WHERE project_id = $1`, s.project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeliveryRetentionDeletesOnlyOldFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupRetention(t)
	// More than one batch of old delivered records, old failed ones, a
	// pending one older than the retention, and records inside it.
	s.addDeliveries(t, 5003, webhook.StateDelivered, 40*day)
	s.addDeliveries(t, 2, webhook.StateFailed, 31*day)
	s.addDeliveries(t, 1, webhook.StatePending, 40*day)
	s.addDeliveries(t, 3, webhook.StateDelivered, 29*day)
	s.addDeliveries(t, 4, webhook.StateFailed, time.Hour)

	r := webhook.NewRetention(s.tx, clock.NewStub(s.now), 30*day, 0, nil)
	if n := r.RunOnce(ctx); n < 5005 {
		t.Fatalf("RunOnce deleted %d records, want at least 5005", n)
	}
	if n, _ := s.count(t, webhook.StateDelivered); n != 3 {
		t.Errorf("%d delivered records left, want the 3 inside the retention", n)
	}
	if n, _ := s.count(t, webhook.StateFailed); n != 4 {
		t.Errorf("%d failed records left, want the 4 inside the retention", n)
	}
	if n, _ := s.count(t, webhook.StatePending); n != 1 {
		t.Errorf("%d pending records left, want 1 (pending work is never pruned)", n)
	}
	if n := s.attemptsLeft(t); n != 8 {
		t.Errorf("%d attempts left, want 8 (those of the records kept)", n)
	}
	if n := r.RunOnce(ctx); n != 0 {
		t.Errorf("a second run deleted %d records, want 0", n)
	}
}

// TestDeliveryRetentionFollowsTheClock: what is old is judged by the
// clock given (a stub here): the same records are kept, then pruned once
// the clock has moved past the retention.
func TestDeliveryRetentionFollowsTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupRetention(t)
	s.addDeliveries(t, 3, webhook.StateDelivered, 2*day)
	clk := clock.NewStub(s.now)
	r := webhook.NewRetention(s.tx, clk, 3*day, 0, nil)
	if n := r.RunOnce(ctx); n != 0 {
		t.Fatalf("deleted %d records two days old with a retention of three", n)
	}
	clk.Advance(day + time.Minute)
	if n := r.RunOnce(ctx); n != 3 {
		t.Fatalf("deleted %d records once three days old, want 3", n)
	}
	if n, a := s.count(t, ""); n != 0 || a != 0 {
		t.Fatalf("%d records and %d attempts left, want none", n, a)
	}
}

func TestDeliveryRetentionZeroKeepsEverything(t *testing.T) {
	t.Parallel()
	s := setupRetention(t)
	s.addDeliveries(t, 2, webhook.StateDelivered, 400*day)
	r := webhook.NewRetention(s.tx, clock.NewStub(s.now), 0, 0, nil)
	if n := r.RunOnce(context.Background()); n != 0 {
		t.Fatalf("RunOnce with retention 0 deleted %d records", n)
	}
	if n, _ := s.count(t, ""); n != 2 {
		t.Fatalf("%d records left, want 2", n)
	}
}

// TestDeliveryRetentionServiceRunsWhenStarted: the service deletes once at
// start (its test signal), and Stop ends it.
func TestDeliveryRetentionServiceRunsWhenStarted(t *testing.T) {
	t.Parallel()
	s := setupRetention(t)
	s.addDeliveries(t, 3, webhook.StateFailed, 3*day)
	r := webhook.NewRetention(s.tx, clock.NewStub(s.now), events.MinRetention, time.Hour, nil)
	r.TestSignals.Deleted.Init()
	r.Start(context.Background())
	if n := r.TestSignals.Deleted.Wait(t); n != 3 {
		t.Errorf("the first run deleted %d records, want 3", n)
	}
	r.Stop()
	if n, _ := s.count(t, ""); n != 0 {
		t.Errorf("%d records left, want 0", n)
	}
}

// TestDeliveryRecordsGuarded: the table lets only the retention (records
// finished over a day ago) and a webhook's deletion remove delivery
// records, and attempts go only with their record.
func TestDeliveryRecordsGuarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupRetention(t)
	s.addDeliveries(t, 1, webhook.StateDelivered, 40*day) // seq 1
	s.addDeliveries(t, 1, webhook.StateDelivered, time.Hour)
	s.addDeliveries(t, 1, webhook.StatePending, 40*day)
	refused := map[string]struct {
		retention bool
		stmt      string
	}{
		"ErrOldWithoutRetention":   {false, `DELETE FROM webhook_deliveries WHERE project_id = $1 AND seq = 1`},
		"ErrYoungUnderRetention":   {true, `DELETE FROM webhook_deliveries WHERE project_id = $1 AND seq = 2`},
		"ErrPendingUnderRetention": {true, `DELETE FROM webhook_deliveries WHERE project_id = $1 AND seq = 3`},
		"ErrAttempt":               {true, `DELETE FROM webhook_attempts WHERE project_id = $1 AND seq = 1`},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			err := db.InTx(ctx, s.tx, func(sp pgx.Tx) error {
				if c.retention {
					if _, err := sp.Exec(ctx, `SELECT set_config('workgraph.deliveries_retention', 'on', true)`); err != nil {
						return err
					}
				}
				_, err := sp.Exec(ctx, c.stmt, s.project)
				return err
			})
			if code := pgCode(err); code != "WG001" {
				t.Fatalf("%s: err = %v, want refused by the table's guard", c.stmt, err)
			}
			if wgerr.CodeOf(db.Translate(err)) == "" {
				t.Fatalf("the refusal is not translated: %v", err)
			}
		})
	}
	if n, a := s.count(t, ""); n != 3 || a != 3 {
		t.Fatalf("after refused deletions: %d records, %d attempts; want 3 and 3", n, a)
	}
	t.Run("OKWithTheWebhook", func(t *testing.T) {
		if err := webhook.NewService(s.tx, nil, true).Delete(ctx, s.project, s.hook); err != nil {
			t.Fatal(err)
		}
		if n, a := s.count(t, ""); n != 0 || a != 0 {
			t.Fatalf("after deleting the webhook: %d records, %d attempts; want none", n, a)
		}
	})
}

// TestDeliveryRecordsNotTruncated: neither table can be truncated (a
// database of its own: TRUNCATE locks the tables against other tests).
func TestDeliveryRecordsNotTruncated(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	for _, stmt := range []string{`TRUNCATE webhook_deliveries CASCADE`, `TRUNCATE webhook_attempts`} {
		if _, err := pool.Exec(context.Background(), stmt); pgCode(err) != "WG001" {
			t.Errorf("%s: err = %v, want refused", stmt, err)
		}
	}
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestCheckDeliveryRetention(t *testing.T) {
	t.Parallel()
	for _, ok := range []time.Duration{0, events.MinRetention, events.DefaultRetention} {
		if err := webhook.CheckRetention(ok); err != nil {
			t.Errorf("CheckRetention(%s) = %v", ok, err)
		}
	}
	for _, bad := range []time.Duration{-time.Hour, time.Hour, events.MinRetention - time.Second} {
		if err := webhook.CheckRetention(bad); wgerr.CodeOf(err) != wgerr.CodeInvalid {
			t.Errorf("CheckRetention(%s) = %v, want invalid_argument", bad, err)
		}
	}
}

// TestAnswerLinkRetention: the retention deletes the answer links that
// expired longer than the retention ago (spent or not), keeps those that
// can still be used or expired recently, and the answer a deleted link
// gave stays on its request.
func TestAnswerLinkRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupLinks(t)
	p := s.project(t)
	spent := mustRequest(t, s.tx, p, "Which region?")
	token, _, err := s.links.Issue(ctx, p, spent.ID, s.hook(t, p, "alice"), "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.links.Answer(ctx, p, token, spent.ID, "eu-west"); err != nil {
		t.Fatal(err)
	}
	unused := mustRequest(t, s.tx, p, "Which bucket?")
	if _, _, err := s.links.Issue(ctx, p, unused.ID, s.hook(t, p, "bob"), "bob", time.Hour); err != nil {
		t.Fatal(err)
	}
	countLinks := func() int {
		t.Helper()
		var n int
		if err := s.tx.QueryRow(ctx, `SELECT count(*) FROM answer_links WHERE project_id = $1`, p).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	r := webhook.NewRetention(s.tx, s.clk, 3*day, 0, nil)
	// Two days on, both links have expired but not longer than the
	// retention ago: they stay (an old link still says "expired").
	s.clk.Advance(2 * day)
	if n := r.RunOnce(ctx); n != 0 {
		t.Fatalf("deleted %d records two days after the links were made, want 0", n)
	}
	// A link made now can still be used when the old ones are old enough.
	fresh := mustRequest(t, s.tx, p, "Which queue?")
	s.clk.Advance(2 * day)
	if _, _, err := s.links.Issue(ctx, p, fresh.ID, s.hook(t, p, "carol"), "carol", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := countLinks(); n != 3 {
		t.Fatalf("%d links before the retention ran, want 3", n)
	}
	if n := r.RunOnce(ctx); n != 2 {
		t.Fatalf("deleted %d records four days on, want the 2 links that expired over three days ago", n)
	}
	if n := countLinks(); n != 1 {
		t.Fatalf("%d links left, want the 1 still usable", n)
	}
	got, err := s.att.Get(ctx, p, spent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Answer == nil || *got.Answer != "eu-west" || got.ResolvedBy == nil || *got.ResolvedBy != webhook.AnsweredBy("alice") {
		t.Fatalf("the answer given through a deleted link: %+v", got)
	}
}
