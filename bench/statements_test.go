package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestStatementName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ query, want string }{
		{"-- name: ClaimItem :one\nWITH candidate AS (SELECT 1)", "ClaimItem"},
		{"  --  name:   HeartbeatLease :one\nUPDATE leases", "HeartbeatLease"},
		{"SELECT\n  pg_notify($1,\n  $2)", "SELECT pg_notify($1, $2)"},
		{"UPDATE bench_minimal_queue SET state = $2, epoch = epoch + $3, worker = $1 WHERE id = $4",
			"UPDATE bench_minimal_queue SET state = $2, epoch = epoch ..."},
	} {
		if got := statementName(c.query); got != c.want {
			t.Errorf("statementName(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}

// TestStatements: with -statements and no database URL the benchmark starts
// its own embedded cluster that loads pg_stat_statements, and reports the
// statements of each workload; the heartbeat workload's top statements
// include the heartbeat's.
func TestStatements(t *testing.T) {
	t.Parallel()
	cfg := smokeConfig()
	cfg.Workloads = []int{6}
	cfg.Statements = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, log bytes.Buffer
	rep, err := run(ctx, cfg, &out, &log)
	if err != nil {
		t.Fatalf("run: %v\nlog:\n%s", err, log.String())
	}
	if len(rep.Statements) != 1 || rep.Statements[0].Workload != 6 {
		t.Fatalf("statements reported: %+v", rep.Statements)
	}
	found := false
	for _, s := range rep.Statements[0].Top {
		if s.Name == "HeartbeatLease" && s.Calls > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no HeartbeatLease among the top statements: %+v", rep.Statements[0].Top)
	}
	if !bytes.Contains(log.Bytes(), []byte("statements of workload 6")) {
		t.Errorf("no statements in the log:\n%s", log.String())
	}
}
