package lease_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestSweeperOutageLogsWarn: a sweep that cannot reach the database (a
// restart, a failover) is logged at warn, as requests answered 503 and
// the other background services are, not at error: an outage the pool
// recovers from by itself must not page whoever alerts on errors once a
// sweep interval. The error says the database is unavailable.
func TestSweeperOutageLogsWarn(t *testing.T) {
	t.Parallel()
	pool := dbtest.Unreachable(t) // every statement fails at connect

	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	w := lease.NewSweeper(lease.NewService(pool, clock.Database{}, lease.Config{}), time.Millisecond, log)
	w.TestSignals.Swept.Init()
	w.Start(context.Background())
	w.TestSignals.Swept.Wait(t)
	w.Stop()

	var line struct {
		Level, Msg, Err string
	}
	first, _, _ := bytes.Cut(logs.Bytes(), []byte("\n"))
	if err := json.Unmarshal(first, &line); err != nil {
		t.Fatalf("want one log line of the failed sweep: %v\n%s", err, logs.String())
	}
	if line.Level != "WARN" || !strings.Contains(line.Err, "unavailable") {
		t.Fatalf("the failed sweep was logged %s with %q; want WARN saying the database is unavailable", line.Level, line.Err)
	}
}
