package dbtest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testPool returns the binary's pool, skipping the test where the pool is
// off (WORKGRAPH_TEST_POOL_SIZE=0, or a test user that is not a
// superuser: every test gets a fresh database there, nothing to test).
func testPool(t testing.TB) *dbPool {
	t.Helper()
	p := getPool(t)
	if p == nil {
		t.Skip("the pool of test databases is off (WORKGRAPH_TEST_POOL_SIZE=0 or not a superuser)")
	}
	return p
}

// privatePool returns the prefix of a pool of the test's own: databases
// no other test (of this binary or another) takes, dropped after the
// test.
func privatePool(t testing.TB) string {
	t.Helper()
	p := testPool(t)
	prefix := fmt.Sprintf("wgpooltest_%d_%d_", os.Getpid(), counter.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		p.mu.Lock() // the binary's lock connection, which its tests share
		rows, err := p.lockConn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", prefix)
		var names []string
		if err == nil {
			names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		p.mu.Unlock()
		if err != nil {
			t.Error(err)
			return
		}
		for _, name := range names {
			dropStale(p.base, name)
		}
	})
	return prefix
}

// binary opens the pool of size databases named prefix<n> on a session
// of its own, as a test binary has.
func binary(t testing.TB, prefix string, size int) *dbPool {
	t.Helper()
	p := testPool(t)
	other, err := openPool(p.base, p.tmpl, p.state)
	if err != nil {
		t.Fatal(err)
	}
	other.size, other.prefix, other.reapStale = size, prefix, false
	t.Cleanup(func() { other.lockConn.Close(context.Background()) })
	return other
}

func mustAcquire(t testing.TB, p *dbPool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, ok, err := p.acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("acquire: %q, %v, %v", name, ok, err)
	}
	return name
}

func connect(t testing.TB, p *dbPool, name string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, withDatabase(p.base, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

func mustExec(t testing.TB, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := conn.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func count(t *testing.T, conn *pgx.Conn, query string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestPoolReset: a database written to (the history tables included:
// leases, their observations, events), analyzed, and left with a session
// open, is handed out again in the template's state: no rows, sequences
// restarted, no statistics, zeroed counters, the leftover session ended.
// Twice: the first reset of a new copy finds the tables to empty by their
// size (no counters zeroed yet), a later one by the counters.
func TestPoolReset(t *testing.T) {
	t.Parallel()
	// A pool of the test's own: it gets back the database it handed back.
	p := binary(t, privatePool(t), 1)
	name := mustAcquire(t, p)
	defer func() { p.release(name) }()
	for _, round := range []string{"OKFromNew", "OKFromReset"} {
		t.Run(round, func(t *testing.T) { writeAndReset(t, p, name) })
	}
}

// writeAndReset writes to the database name, which the caller holds,
// hands it back and takes it again, and checks that it is as the
// template.
func writeAndReset(t *testing.T, p *dbPool, name string) {
	ctx := context.Background()
	conn := connect(t, p, name)
	const project, item, lease = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222", "33333333-3333-3333-3333-333333333333"
	mustExec(t, conn,
		`INSERT INTO projects (id, name) VALUES ('`+project+`', 'reset')`,
		`INSERT INTO items (project_id, id, title, created_by) VALUES ('`+project+`', '`+item+`', 'one', 'test')`,
		`INSERT INTO items (project_id, title, created_by) SELECT '`+project+`', 'item ' || i, 'test' FROM generate_series(1, 200) i`,
		`INSERT INTO leases (project_id, id, item_id, epoch, worker, principal, acquired_at, expires_at)
			VALUES ('`+project+`', '`+lease+`', '`+item+`', 1, 'w', 'test', now(), now() + interval '1 minute')`,
		`INSERT INTO lease_observations (project_id, lease_id, epoch, kind, operation, received_at)
			VALUES ('`+project+`', '`+lease+`', 1, 'stale_call', 'heartbeat', now())`,
		`ANALYZE items`,
	)
	for _, table := range []string{"projects", "items", "leases", "lease_observations", "events"} {
		if n := count(t, conn, "SELECT count(*) FROM "+table); n == 0 {
			t.Fatalf("setup wrote no row into %s", table)
		}
	}
	if n := count(t, conn, "SELECT count(*) FROM pg_statistic WHERE starelid = 'items'::regclass"); n == 0 {
		t.Fatal("setup: ANALYZE left no statistics")
	}
	conn.Close(ctx)
	// A session a killed test binary would have left behind.
	leftover := connect(t, p, name)
	mustExec(t, leftover, "BEGIN", "SELECT FROM items LIMIT 1")

	p.release(name)
	start := time.Now()
	if again := mustAcquire(t, p); again != name {
		t.Fatalf("acquired %s after handing back %s, want it again", again, name)
	}
	t.Logf("reset of %s took %v", name, time.Since(start))

	if _, err := leftover.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("a session left on the database survived the reset")
	}
	check := connect(t, p, name)
	for _, table := range p.state.Empty {
		if n := count(t, check, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s holds %d rows after the reset, want 0", table, n)
		}
	}
	for _, s := range p.state.Sequences {
		var last int64
		var called bool
		if err := check.QueryRow(ctx, "SELECT last_value, is_called FROM "+s.Name).Scan(&last, &called); err != nil {
			t.Fatal(err)
		}
		if last != s.Last || called != s.Called {
			t.Errorf("sequence %s at (%d, %v), want the template's (%d, %v)", s.Name, last, called, s.Last, s.Called)
		}
	}
	for _, r := range p.state.Relations {
		var pages int32
		var tuples float32
		if err := check.QueryRow(ctx, "SELECT relpages, reltuples FROM pg_class WHERE oid = $1", r.OID).Scan(&pages, &tuples); err != nil {
			t.Fatal(err)
		}
		if pages != r.Pages || tuples != r.Tuples {
			t.Errorf("relation %d estimated at %d pages, %v rows; want the template's %d, %v", r.OID, pages, tuples, r.Pages, r.Tuples)
		}
	}
	if n := count(t, check, "SELECT count(*) FROM pg_statistic WHERE starelid >= 16384"); n != 0 {
		t.Errorf("%d rows of planner statistics after the reset, want none", n)
	}
	if n := count(t, check, "SELECT coalesce(sum(n_tup_ins + n_tup_del), 0) FROM pg_stat_user_tables"); n != 0 {
		t.Errorf("the activity counters count %d rows inserted or deleted before the reset", n)
	}
	var schema string
	if err := check.QueryRow(ctx, schemaQuery).Scan(&schema); err != nil || schema != p.state.Schema {
		t.Errorf("schema digest %s (%v) after the reset, want the template's %s", schema, err, p.state.Schema)
	}
	// The first rows written after the reset are numbered from 1 (in a
	// transaction rolled back: the next round starts with no rows).
	mustExec(t, check, "BEGIN",
		`INSERT INTO projects (id, name) VALUES ('`+project+`', 'reset')`,
		`INSERT INTO items (project_id, title, created_by) VALUES ('`+project+`', 'first', 'test')`)
	if seq := count(t, check, "SELECT seq FROM items"); seq != 1 {
		t.Errorf("the first item after the reset has seq %d, want 1", seq)
	}
	if seq := count(t, check, "SELECT min(seq) FROM events"); seq != 1 {
		t.Errorf("the first event after the reset has seq %d, want 1", seq)
	}
	mustExec(t, check, "ROLLBACK")
	check.Close(ctx)
}

// TestPoolReplacesChanged: a database whose schema or settings a test
// changed (it should have used FreshURL) is not handed out again as it
// is: the next test gets a fresh copy of the template under its name.
func TestPoolReplacesChanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, change string }{
		{"Table", "CREATE TABLE leftover (n int)"},
		{"TriggerDisabled", "ALTER TABLE leases DISABLE TRIGGER leases_no_truncate"},
		{"GooseVersion", "DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)"},
		{"DatabaseSetting", "ALTER DATABASE $db SET work_mem = '8MB'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A pool of its own: it gets back what it handed back.
			other := binary(t, privatePool(t), 1)
			name := mustAcquire(t, other)
			conn := connect(t, other, name)
			mustExec(t, conn, strings.ReplaceAll(c.change, "$db", name))
			conn.Close(context.Background())
			other.release(name)
			if again := mustAcquire(t, other); again != name {
				t.Fatalf("acquired %s after handing back %s, want it again", again, name)
			}
			defer other.release(name)
			check := connect(t, other, name)
			var schema, settings string
			if err := check.QueryRow(context.Background(), schemaQuery).Scan(&schema); err != nil {
				t.Fatal(err)
			}
			if schema != other.state.Schema {
				t.Errorf("schema digest %s after %q, want the template's %s", schema, c.change, other.state.Schema)
			}
			if err := check.QueryRow(context.Background(), `SELECT coalesce(array_agg(setconfig::text)::text, '')
				FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&settings); err != nil {
				t.Fatal(err)
			}
			if settings != "{\"{synchronous_commit=off}\"}" {
				t.Errorf("database settings %s after %q, want only synchronous_commit=off", settings, c.change)
			}
			if d := count(t, check, "SELECT count(*) FROM goose_db_version"); d == 0 {
				t.Error("goose_db_version is empty")
			}
			seeded, err := rowsDigest(context.Background(), check, other.state.seededTables())
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(seeded, other.state.Seeded) {
				t.Errorf("the seeded tables' rows after %q: digests %v, want the template's %v", c.change, seeded, other.state.Seeded)
			}
		})
	}
}

// TestPoolExclusive: acquirers in one binary and in two (two sessions
// holding the advisory locks) never hold the same database at once, and
// a pool whose databases are all in use says so.
func TestPoolExclusive(t *testing.T) {
	t.Parallel()
	prefix := privatePool(t)
	pools := []*dbPool{binary(t, prefix, 4), binary(t, prefix, 4)}
	var mu sync.Mutex
	holder := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 6 {
		p := pools[g%2]
		wg.Go(func() {
			for range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				name, ok, err := p.acquire(ctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue // all in use: the caller would take a fresh one
				}
				mu.Lock()
				if h, taken := holder[name]; taken {
					errs <- fmt.Errorf("acquirer %d got %s, which acquirer %d holds", g, name, h)
				}
				holder[name] = g
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				delete(holder, name)
				mu.Unlock()
				p.release(name)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Full: a pool of 2 whose both databases another session holds.
	prefix = privatePool(t)
	small, other := binary(t, prefix, 2), binary(t, prefix, 2)
	var held []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		name, ok, err := other.acquire(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		held = append(held, name)
	}
	defer func() {
		for _, name := range held {
			other.release(name)
		}
	}()
	if len(held) != 2 {
		t.Fatalf("a pool of 2 handed out %d databases, want 2: %v", len(held), held)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if name, ok, err := small.acquire(ctx); err != nil || ok {
		t.Errorf("acquire from a full pool = %q, %v, %v; want none", name, ok, err)
		if ok {
			small.release(name)
		}
	}
}

// BenchmarkPoolReset: what handing a used database out again costs, after
// a test wrote a project and 20 items (go test -run '^$' -bench
// PoolReset ./db/dbtest/). On the idle development server: about 30 ms,
// against 260 ms for a CREATE DATABASE from the template (1 s and more
// while the suite runs).
func BenchmarkPoolReset(b *testing.B) {
	p := binary(b, privatePool(b), 1)
	name := mustAcquire(b, p)
	defer p.release(name)
	ctx := context.Background()
	var resets time.Duration
	for b.Loop() {
		conn := connect(b, p, name)
		mustExec(b, conn,
			`INSERT INTO projects (id, name) VALUES ('11111111-1111-1111-1111-111111111111', 'bench')`,
			`INSERT INTO items (project_id, title, created_by)
				SELECT '11111111-1111-1111-1111-111111111111', 'item ' || i, 'bench' FROM generate_series(1, 20) i`)
		conn.Close(ctx)
		start := time.Now()
		if err := p.reset(ctx, name); err != nil {
			b.Fatal(err)
		}
		resets += time.Since(start)
	}
	b.ReportMetric(float64(resets.Milliseconds())/float64(b.N), "ms/reset")
}
