package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestStartErrorNamesStatementTimeout: a start whose statement ran out of
// --statement-timeout says which setting to raise; other errors pass as
// they are. The cancellation is PostgreSQL's own (statement_timeout).
func TestStartErrorNamesStatementTimeout(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := tx.Exec(ctx, "SELECT pg_sleep(1)")
	if !db.StatementCancelled(err) {
		t.Fatalf("pg_sleep under a 1 ms timeout: %v, want a cancelled statement", err)
	}
	got := startError(db.Translate(err), time.Millisecond)
	if !strings.Contains(got.Error(), "statement-timeout 1ms") || !errors.Is(got, err) {
		t.Fatalf("startError = %v, want it to name statement-timeout and wrap the cause", got)
	}
	other := errors.New("address in use")
	if startError(other, time.Millisecond) != other {
		t.Fatal("startError changed an error that is not a cancelled statement")
	}
}
