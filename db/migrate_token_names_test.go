package db_test

import (
	"context"
	"testing"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestMigrateTokenNames: migration 00014 makes token names unique per
// project. Duplicates made before it are kept, the oldest under its name,
// every later one renamed NAME#ID8; admin tokens of no project are left as
// they are.
func TestMigrateTokenNames(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // new: it migrates down and up

	ctx := context.Background()
	if err := db.MigrateDownTo(ctx, pool, 13); err != nil { // below 00014, which renames duplicates
		t.Fatal(err)
	}
	var project string
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tokens (id, project_id, name, role, secret_hash, created_at) VALUES
		('00000000-0000-0000-0000-000000000001', $1, 'agent-1', 'agent', sha256('a'), now() - interval '2 hours'),
		('10000000-0000-0000-0000-000000000002', $1, 'agent-1', 'agent', sha256('b'), now() - interval '1 hour'),
		('20000000-0000-0000-0000-000000000003', NULL, 'bootstrap', 'admin', sha256('c'), now()),
		('30000000-0000-0000-0000-000000000004', NULL, 'bootstrap', 'admin', sha256('d'), now())`, project); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"00000000-0000-0000-0000-000000000001": "agent-1",
		"10000000-0000-0000-0000-000000000002": "agent-1#10000000",
		"20000000-0000-0000-0000-000000000003": "bootstrap",
		"30000000-0000-0000-0000-000000000004": "bootstrap",
	}
	for id, name := range want {
		var got string
		if err := pool.QueryRow(ctx, "SELECT name FROM tokens WHERE id = $1", id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != name {
			t.Errorf("token %s is named %q, want %q", id, got, name)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tokens (project_id, name, role, secret_hash)
		VALUES ($1, 'agent-1', 'agent', sha256('e'))`, project); err == nil {
		t.Fatal("a third agent-1 was accepted after the migration")
	}
}
