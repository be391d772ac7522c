package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestTranslate provokes each kind of error in a real database and checks
// the kind Translate gives it.
func TestTranslate(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "INSERT INTO projects (name) VALUES ('p')"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		sql  string
		want *wgerr.Error
	}{
		"NoRows":     {"SELECT id FROM projects WHERE name = 'nobody'", wgerr.NotFound},
		"Unique":     {"INSERT INTO projects (name) VALUES ('p')", wgerr.AlreadyExists},
		"ForeignKey": {"INSERT INTO tokens (project_id, name, role, secret_hash) VALUES (gen_random_uuid(), 't', 'agent', decode(repeat('00', 32), 'hex'))", wgerr.NotFound},
		"Check":      {"INSERT INTO projects (name) VALUES ('has space')", wgerr.Invalid},
		"History":    {"TRUNCATE leases CASCADE", wgerr.Conflict},
		"Other":      {"SELECT no_such_column FROM projects", wgerr.Internal},
		"Blocked":    {"SELECT item_finishable(1, 0)", wgerr.Blocked},
	} {
		t.Run(name, func(t *testing.T) {
			var dst any
			err := db.Translate(pool.QueryRow(ctx, tc.sql).Scan(&dst))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Translate: %v (code %s), want %s", err, wgerr.CodeOf(err), tc.want.Code)
			}
		})
	}
	t.Run("PassesKindsThrough", func(t *testing.T) {
		in := wgerr.New(wgerr.CodeLeaseLost, "lost")
		if got := db.Translate(in); got != error(in) {
			t.Fatalf("Translate changed an error that had a kind: %v", got)
		}
		if db.Translate(nil) != nil {
			t.Fatal("Translate(nil) is not nil")
		}
	})
}

// TestInTx commits on success and rolls back on error.
func TestInTx(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	boom := wgerr.New(wgerr.CodeConflict, "boom")
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO projects (name) VALUES ('rolled-back')"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx returned %v, want the function's error", err)
	}
	if err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO projects (name) VALUES ('kept')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var names []string
	rows, _ := pool.Query(ctx, "SELECT name FROM projects ORDER BY name")
	names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(names) != 1 || names[0] != "kept" {
		t.Fatalf("projects %v (%v), want only the committed one", names, err)
	}
}
