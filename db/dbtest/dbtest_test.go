package dbtest_test

import (
	"context"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestNewCommitsAsynchronously: a test database's sessions commit without
// waiting for the WAL flush (dbtest sets it on the database, so every pool
// and process that connects gets it, a test server's included).
func TestNewCommitsAsynchronously(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	var got string
	if err := pool.QueryRow(context.Background(), "SHOW synchronous_commit").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "off" {
		t.Errorf("synchronous_commit = %q in a test database, want off", got)
	}
}
