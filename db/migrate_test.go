package db_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestMigrateDownAndUp: every migration's Down section runs, one step at a
// time, down to an empty schema (no table of the project is left), and
// every migration then applies again.
func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // new: it migrates the schema away and back

	ctx := context.Background()
	status := func() string {
		var b bytes.Buffer
		if err := db.MigrationStatus(ctx, pool, &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	n := strings.Count(status(), "applied")
	if n < 8 {
		t.Fatalf("only %d migrations applied:\n%s", n, status())
	}
	for i := 0; i < n; i++ {
		if err := db.MigrateDown(ctx, pool); err != nil {
			t.Fatalf("down step %d: %v\n%s", i+1, err, status())
		}
	}
	if s := status(); strings.Contains(s, "applied") {
		t.Fatalf("applied after %d steps down:\n%s", n, s)
	}
	var tables []string
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables
		WHERE schemaname = 'public' AND tablename <> 'goose_db_version' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) > 0 {
		t.Fatalf("tables left after every Down: %v", tables)
	}
	if err := db.Migrate(ctx, pool, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := strings.Count(status(), "applied"); got != n {
		t.Fatalf("%d migrations applied after up, want %d:\n%s", got, n, status())
	}

	// The log: one line at info says how many were applied; each is a
	// debug line.
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		for range 2 {
			if err := db.MigrateDown(ctx, pool); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		if err := db.Migrate(ctx, pool, slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level}))); err != nil {
			t.Fatal(err)
		}
		log := out.String()
		each := 0
		if level == slog.LevelDebug {
			each = 2
		}
		if strings.Count(log, `msg="migrations applied" count=2 `) != 1 || strings.Count(log, `msg="migration applied"`) != each {
			t.Errorf("at %s, two migrations logged:\n%s", level, log)
		}
	}
	var quiet bytes.Buffer
	if err := db.Migrate(ctx, pool, slog.New(slog.NewTextHandler(&quiet, nil))); err != nil || quiet.Len() != 0 {
		t.Errorf("nothing to apply: %v, logged %q", err, quiet.String())
	}
}
