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

// TestServerHoldsTheSuite: the server the tests run on allows the
// connections the whole suite holds at once (dbtest.SuiteConnections). On
// Debian's default server (max_connections 100) the suite was refused
// connections now and then ("too many clients already") and a test
// failed; dbtest then uses the embedded cluster instead. A server named by
// WORKGRAPH_TEST_DATABASE_URL is used as given, as is the small server
// when no embedded cluster can start, and this test says when it is too
// small for the suite.
func TestServerHoldsTheSuite(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	var slots int
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('max_connections')::int").Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots < dbtest.SuiteConnections {
		t.Errorf("the test server allows %d connections; the suite holds up to about 100 at once and needs %d: "+
			"raise its max_connections, or let the tests start their embedded cluster "+
			"(WORKGRAPH_TEST_DATABASE_URL unset, PostgreSQL's server binaries installed)",
			slots, dbtest.SuiteConnections)
	}
}
