package dbq_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestNoMatchProbesDoNotReadItemsInBackoff: 3,000 items that require gpu
// wait out a retry backoff, and the project's only other ready items
// require tpu: nothing ready requires nothing. A claim offering cpu can
// match nothing, and its probes (ClaimNeedsTx's hopeless, ClaimHopeless,
// MissingCapabilities, each in a transaction of its own) must say so
// reading at most 100 rows of items (the transaction's pg_stat counters,
// nested statements included), not one row per item in backoff:
// items_backoff is keyed by instant, and asking it "does one of you
// require nothing" or "what do you require" read it whole. A claim
// offering gpu is not hopeless (the items in backoff will be claimable),
// read the same way.
func TestNoMatchProbesDoNotReadItemsInBackoff(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('gpu-outage') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	fill := []string{
		`INSERT INTO items (project_id, title, priority, created_by, requires, failures, not_before, in_backoff)
		 SELECT $1, 'failing ' || g, 10, 'test', '{gpu}', 1, now() + interval '1 hour' + g * interval '1 ms', true
		 FROM generate_series(1, 3000) g`,
		`INSERT INTO items (project_id, title, priority, created_by, requires)
		 SELECT $1, 'tpu ' || g, 0, 'test', '{tpu}' FROM generate_series(1, 3) g`,
	}
	for _, stmt := range fill {
		if _, err := pool.Exec(ctx, stmt, project); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE items`); err != nil {
		t.Fatal(err)
	}
	q := dbq.New()
	cases := []struct {
		name string
		run  func(t *testing.T, tx pgx.Tx)
	}{
		{"ClaimNeedsTx/Hopeless", func(t *testing.T, tx pgx.Tx) {
			r, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{}, Worker: "w", Capabilities: []string{"cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Hopeless || r.NeedsTx || r.Missed {
				t.Errorf("ClaimNeedsTx = %+v, want hopeless alone", r)
			}
		}},
		{"ClaimNeedsTx/WaitsForBackoff", func(t *testing.T, tx pgx.Tx) {
			r, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{}, Worker: "w", Capabilities: []string{"gpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Hopeless || r.NeedsTx || r.Missed {
				t.Errorf("ClaimNeedsTx = %+v, want nothing (the items in backoff will be claimable)", r)
			}
		}},
		{"ClaimHopeless", func(t *testing.T, tx pgx.Tx) {
			r, err := q.ClaimHopeless(ctx, tx, dbq.ClaimHopelessParams{ProjectID: project, Capabilities: []string{"cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.AnyReady || r.AnyMatch {
				t.Errorf("ClaimHopeless = %+v, want ready items, none matching", r)
			}
		}},
		{"ClaimHopeless/WaitsForBackoff", func(t *testing.T, tx pgx.Tx) {
			r, err := q.ClaimHopeless(ctx, tx, dbq.ClaimHopelessParams{ProjectID: project, Capabilities: []string{"gpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.AnyReady || !r.AnyMatch {
				t.Errorf("ClaimHopeless = %+v, want ready items, some matching", r)
			}
		}},
		{"MissingCapabilities", func(t *testing.T, tx pgx.Tx) {
			got, err := q.MissingCapabilities(ctx, tx, dbq.MissingCapabilitiesParams{ProjectID: project, Capabilities: []string{"cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"gpu", "tpu"}; !slices.Equal(got, want) {
				t.Errorf("MissingCapabilities = %v, want %v", got, want)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			// Once to plan (the functions' plans are the session's), then
			// counted.
			c.run(t, tx)
			before := itemRowsRead(t, tx)
			c.run(t, tx)
			rows := itemRowsRead(t, tx) - before
			t.Logf("%s read %d rows of items", c.name, rows)
			if rows > 100 {
				t.Errorf("%s read %d rows of items past 3,000 items in backoff", c.name, rows)
			}
		})
	}
}
