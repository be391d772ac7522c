package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/idempotency"
)

// TestJanitorOutageLogsWarn: a run that cannot reach the database is
// logged at warn (the next run catches up), like the other background
// services, not at error.
func TestJanitorOutageLogsWarn(t *testing.T) {
	t.Parallel()
	pool := dbtest.Unreachable(t) // every statement fails at connect

	var logs bytes.Buffer
	j := idempotency.NewJanitor(idempotency.NewStore(pool, clock.Database{}), 0, slog.New(slog.NewJSONHandler(&logs, nil)))
	j.RunOnce(context.Background())

	var line struct {
		Level, Err string
	}
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
		t.Fatalf("want one log line of the failed run: %v\n%s", err, logs.String())
	}
	if line.Level != "WARN" || !strings.Contains(line.Err, "unavailable") {
		t.Fatalf("the failed run was logged %s with %q; want WARN saying the database is unavailable", line.Level, line.Err)
	}
}
