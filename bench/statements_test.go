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

// TestStatementCensus: workload 1's census of the lease service's steps
// (stmts_*, trips_*) shows the lean hot path's round trips: a claim and a
// heartbeat are one statement each, a completion two (the ending statement
// and the release of dependents and parent) pipelined in one round trip.
// It reads the smoke run's (sharedSmoke).
func TestStatementCensus(t *testing.T) {
	t.Parallel()
	s := sharedSmoke(t)
	rep, out := s.rep, &s.out
	want := map[string]func(float64) bool{
		"stmts_claim":     func(n float64) bool { return n == 1 },
		"stmts_heartbeat": func(n float64) bool { return n == 1 },
		"stmts_complete":  func(n float64) bool { return n == 2 },
		"trips_claim":     func(n float64) bool { return n == 1 },
		"trips_heartbeat": func(n float64) bool { return n == 1 },
		"trips_complete":  func(n float64) bool { return n == 1 },
	}
	found := false
	for _, r := range rep.Results {
		if r.Workload != 1 || r.Name != "server-sql" {
			continue
		}
		found = true
		for name, ok := range want {
			if n, present := r.Extra[name]; !present || !ok(n) {
				t.Errorf("server-sql %s = %v (present %v)", name, n, present)
			}
		}
	}
	if !found {
		t.Fatalf("no server-sql result:\n%s", out.String())
	}
}

// TestRESTStatementCensus: workload 2's census of the REST lifecycle
// (trips_*) shows each step of a lease costing the database one round
// trip: a token the server verified before is checked in the step's first
// round trip, not looked up in one of its own. Bare net/http agents
// (rest-raw, no Idempotency-Key): claim, heartbeat and complete in one
// round trip each. The Go client (rest) sends an Idempotency-Key with its
// claim: the record's begin and mark ride in the claim's round trip, and
// the answer is stored in a second one. It reads the smoke run's
// (sharedSmoke), where workload 2 runs interleaved with workload 1.
func TestRESTStatementCensus(t *testing.T) {
	t.Parallel()
	s := sharedSmoke(t)
	rep, out := s.rep, &s.out
	want := map[string]map[string]float64{
		"rest-raw": {"trips_claim": 1, "trips_heartbeat": 1, "trips_complete": 1},
		"rest":     {"trips_claim": 2, "trips_heartbeat": 1, "trips_complete": 1},
	}
	for _, r := range rep.Results {
		w, ok := want[r.Name]
		if r.Workload != 2 || !ok {
			continue
		}
		delete(want, r.Name)
		for name, n := range w {
			if got, present := r.Extra[name]; !present || got != n {
				t.Errorf("%s %s = %v (present %v), want %v", r.Name, name, got, present, n)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("no results for %v:\n%s", want, out.String())
	}
}
