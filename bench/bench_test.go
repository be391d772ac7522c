package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/internal/pgbouncer"
)

// smokeRun is one run of every workload in smoke mode against a test
// database of its own, with what it wrote. TestSmoke, TestSmokePgBouncer
// and the census tests check the same run (each workload's figures are the
// same whichever test reads them), so the binary runs it once, in the
// first test that asks (sharedSmoke).
type smokeRun struct {
	cfg      Config
	rep      *Report
	err      error
	out, log bytes.Buffer
	// stored and svg are the files the run wrote (latest.json and its
	// chart), read before the asking test's temporary directory goes.
	stored, svg []byte
}

var smoke struct {
	once sync.Once
	run  *smokeRun
}

// runSmoke runs every workload in smoke mode in t.
func runSmoke(t *testing.T) *smokeRun {
	r := &smokeRun{cfg: smokeConfig()}
	// Workload 2's pooled variant (TestSmokePgBouncer) where PgBouncer
	// is installed; without it the run would report it skipped.
	_, err := pgbouncer.Binary()
	r.cfg.PgBouncer = err == nil
	r.cfg.DatabaseURL = dbtest.URL(t)
	r.cfg.Out = filepath.Join(t.TempDir(), "latest.json")
	// A guard against a hung run, not a speed check: alone the smoke run
	// takes about a minute, but on a loaded CI machine (the fault run and
	// the other packages beside it) it took over two.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if r.rep, r.err = run(ctx, r.cfg, &r.out, &r.log); r.err != nil {
		return r
	}
	if r.stored, r.err = os.ReadFile(r.cfg.Out); r.err != nil {
		return r
	}
	r.svg, r.err = os.ReadFile(strings.TrimSuffix(r.cfg.Out, ".json") + ".svg")
	return r
}

// sharedSmoke returns the binary's smoke run, running it in t if no test
// did yet, and fails t if the run failed. With -count above 1 each call
// runs one of its own: every repetition of a test checks a new run.
func sharedSmoke(t *testing.T) *smokeRun {
	t.Helper()
	var r *smokeRun
	if c := flag.Lookup("test.count"); c != nil && c.Value.String() != "1" {
		r = runSmoke(t)
	} else {
		smoke.once.Do(func() {
			// Set first: when runSmoke stops t (t.Fatal in its
			// setup), Do still returns, and the tests after it fail
			// with this instead of reading a nil run.
			smoke.run = &smokeRun{err: errors.New("stopped before it ran (the test that started it failed)")}
			smoke.run = runSmoke(t)
		})
		r = smoke.run
	}
	if r.err != nil {
		t.Fatalf("smoke run: %v\nlog:\n%s", r.err, r.log.String())
	}
	return r
}

// TestSmoke runs every workload in smoke mode against a fresh test
// database: it keeps the benchmark command compiling and working. It checks
// that each workload measured something without errors, not how fast.
func TestSmoke(t *testing.T) {
	t.Parallel()
	r := sharedSmoke(t)
	rep := r.rep
	if len(rep.Skipped) > 0 {
		t.Errorf("skipped: %s\nlog:\n%s", strings.Join(rep.Skipped, "; "), r.log.String())
	}
	measured := map[int]bool{}
	for _, r := range rep.Results {
		measured[r.Workload] = true
		if r.Ops == 0 {
			t.Errorf("workload %d %s: no operations measured", r.Workload, r.Name)
		}
		for kind, n := range r.Errors {
			t.Errorf("workload %d %s: %d errors %s", r.Workload, r.Name, n, kind)
		}
		// Where the cluster's CPU is read (it runs on this machine), so is
		// its WAL, and every lifecycle of workload 1 writes some.
		if _, metered := r.Extra["cpu_per_1k_pg_s"]; metered && r.Workload == 1 && r.Extra["wal_bytes_per_op"] <= 0 {
			t.Errorf("workload 1 %s: wal_bytes_per_op = %v, want the WAL of a lifecycle (extras %v)", r.Name, r.Extra["wal_bytes_per_op"], r.Extra)
		}
	}
	for _, id := range r.cfg.Workloads {
		if !measured[id] {
			t.Errorf("workload %d: no result", id)
		}
	}

	var stored Report
	if err := json.Unmarshal(r.stored, &stored); err != nil {
		t.Fatalf("latest.json: %v", err)
	}
	if len(stored.Results) != len(rep.Results) {
		t.Errorf("latest.json has %d results, want %d", len(stored.Results), len(rep.Results))
	}
	if !bytes.HasPrefix(r.svg, []byte("<svg")) {
		t.Errorf("chart does not start with <svg: %.40q", r.svg)
	}
	if !strings.Contains(r.out.String(), "throughput") {
		t.Errorf("no table on stdout:\n%s", r.out.String())
	}
}

// TestSmokePgBouncer: in the smoke run, which adds -pgbouncer where
// PgBouncer is installed (sharedSmoke), the REST lifecycle through the
// bench's own PgBouncer is measured beside the direct one, without errors,
// and compared with it.
func TestSmokePgBouncer(t *testing.T) {
	t.Parallel()
	if _, err := pgbouncer.Binary(); err != nil {
		t.Skip(err)
	}
	s := sharedSmoke(t)
	rep, log := s.rep, &s.log
	if len(rep.Skipped) > 0 {
		t.Errorf("skipped: %s", strings.Join(rep.Skipped, "; "))
	}
	var direct, pooled *Result
	for i, r := range rep.Results {
		if r.Workload != 2 {
			continue
		}
		for kind, n := range r.Errors {
			t.Errorf("workload %d %s: %d errors %s", r.Workload, r.Name, n, kind)
		}
		switch r.Name {
		case "rest":
			direct = &rep.Results[i]
		case "rest-pgbouncer":
			pooled = &rep.Results[i]
		}
	}
	if direct == nil || pooled == nil {
		t.Fatalf("want rest and rest-pgbouncer results, got %+v\nlog:\n%s", rep.Results, log.String())
	}
	if pooled.Ops == 0 {
		t.Errorf("rest-pgbouncer: no lifecycle measured")
	}
	if pooled.Extra["ratio_to_direct"] <= 0 {
		t.Errorf("rest-pgbouncer: ratio_to_direct = %v, want the ratio to rest", pooled.Extra["ratio_to_direct"])
	}
}
