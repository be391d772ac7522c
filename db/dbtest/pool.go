package dbtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
)

// The pool of reusable test databases (River's riverdbtest.TestSchema is
// the model). A copy of the template costs a CREATE DATABASE (0.15 to
// 0.45 s on the loaded development server, 1 s and more on a busier one;
// its 9 MB written through the WAL, then again by a checkpoint, and its
// drop forces a checkpoint), so URL hands a test a database of the pool
// instead: wgpool_<migrations digest>_<n>, n below the pool's size, kept
// on the server after the run for the next one.
//
// Exclusive use: a database is held by a session-level advisory lock,
// (poolLockClass, hashtext(name)), taken on one connection per test
// binary (lockConn) for as long as a test uses it; the server releases it
// if the binary dies. Within the binary, which holds all its locks on one
// session (where an advisory lock is reentrant), busy says which are in
// use.
//
// Reset: before a database is handed out it is brought back to the
// template's state (reset): its other sessions (left by a killed run)
// terminated, its schema and settings compared with the template's (a
// database that differs is replaced by a fresh copy: the test that
// changed it should have used FreshURL), every table emptied, sequences
// restored, the planner's statistics and estimates restored, activity
// counters zeroed.
//
// A database of another migrations digest (an older template) is taken
// out of the pool when seen unused (renamed at once, dropped when the
// binary's tests have ended); DropPool (`make drop-test-pool`) drops them
// all.
const (
	poolPrefix    = "wgpool_"
	poolLockClass = 7250002
	// defaultPoolSize bounds the pool: a run of the suite (`-p 3
	// -parallel 4`) holds about 15 at once, a second run beside it as
	// many. When all are in use, a test gets a fresh database.
	defaultPoolSize = 32
	// poolSizeEnv sets the pool's size; 0 turns the pool off (every test
	// gets a fresh database, as FreshURL).
	poolSizeEnv = "WORKGRAPH_TEST_POOL_SIZE"
)

var (
	poolOnce sync.Once
	thePool  *dbPool
	poolErr  error
)

type dbPool struct {
	base, tmpl string
	state      *templateState
	size       int
	// prefix names the pool's databases, prefix<n>: wgpool_<digest>_.
	prefix string
	// reapStale: databases of another digest are dropped when seen.
	reapStale bool

	mu       sync.Mutex
	lockConn *pgx.Conn       // holds the advisory locks of the databases in use
	busy     map[string]bool // databases this binary's tests hold
	held     map[string]bool // stale databases this binary holds to drop them
}

// getPool returns the binary's pool, or nil when the pool is off (its
// size is 0, or the test user cannot reset a database: not a superuser).
func getPool(tb testing.TB) *dbPool {
	tb.Helper()
	tmpl, state := template(tb)
	poolOnce.Do(func() { thePool, poolErr = openPool(ServerURL(tb), tmpl, state) })
	if poolErr != nil {
		tb.Fatalf("dbtest: pool of test databases: %v", poolErr)
	}
	return thePool
}

func openPool(base, tmpl string, state *templateState) (*dbPool, error) {
	size := defaultPoolSize
	if s := os.Getenv(poolSizeEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s=%q: want a count", poolSizeEnv, s)
		}
		size = n
	}
	if size == 0 || state == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, err
	}
	// Reset needs a superuser: session_replication_role (past the history
	// tables' TRUNCATE guards), pg_statistic, other users' sessions.
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		conn.Close(ctx)
		return nil, err
	}
	return &dbPool{
		base: base, tmpl: tmpl, state: state, size: size,
		prefix: poolPrefix + db.MigrationsHash() + "_", reapStale: true,
		lockConn: conn, busy: map[string]bool{}, held: map[string]bool{},
	}, nil
}

func (p *dbPool) name(n int) string { return p.prefix + strconv.Itoa(n) }

// acquire takes a database of the pool for the caller, reset to the
// template's state, and returns its name, or ok false when all are in use.
func (p *dbPool) acquire(ctx context.Context) (name string, ok bool, err error) {
	name, exists, err := p.lock(ctx)
	if err != nil || name == "" {
		return "", false, err
	}
	if exists {
		err = p.reset(ctx, name)
	} else {
		err = p.create(ctx, name)
	}
	if err != nil {
		p.release(name)
		return "", false, fmt.Errorf("prepare pooled database %s: %w", name, err)
	}
	return name, true, nil
}

// lock takes the first database of the pool that nobody uses (creating
// none: exists says whether it is on the server), or "" when all are in
// use. Databases of another digest seen on the way and not in use are
// taken too, for Main to drop.
func (p *dbPool) lock(ctx context.Context) (name string, exists bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.prefix
	if p.reapStale {
		seen = poolPrefix
	}
	names, err := queryStrings(ctx, p.lockConn, `SELECT datname FROM pg_database WHERE datname LIKE $1`,
		strings.ReplaceAll(seen, "_", `\_`)+"%")
	if err != nil {
		return "", false, err
	}
	ours := map[int]bool{}
	for _, dbName := range names {
		if n, ok := p.slot(dbName); ok {
			ours[n] = true
			continue
		}
		if !p.reapStale || p.held[dbName] {
			continue
		}
		got, err := p.tryLock(ctx, dbName)
		if err != nil {
			return "", false, err
		}
		if !got {
			continue
		}
		p.held[dbName] = true
		// Renamed out of the pool now, while this binary holds it: a
		// binary of its digest that came later would take it, and the
		// drop would end its test's sessions. A database with sessions
		// (left by a killed run) cannot be renamed; the next one tries.
		trash := fmt.Sprintf("wgtest_%d_%d", os.Getpid(), counter.Add(1))
		if _, err := p.lockConn.Exec(ctx, "ALTER DATABASE "+dbName+" RENAME TO "+trash); err == nil {
			dropStale(p.base, trash)
		}
	}
	// The lowest free slot first, existing or not: the pool grows only
	// as far as the binaries' concurrency needs.
	for n := range p.size {
		name := p.name(n)
		if p.busy[name] {
			continue
		}
		got, err := p.tryLock(ctx, name)
		if err != nil {
			return "", false, err
		}
		if !got {
			continue
		}
		p.busy[name] = true
		exists := ours[n]
		if !exists {
			// Created by another binary since the list was read?
			err := p.lockConn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists)
			if err != nil {
				p.unlockLocked(name)
				return "", false, err
			}
		}
		return name, exists, nil
	}
	return "", false, nil
}

// slot returns n of the pool's database prefix<n>.
func (p *dbPool) slot(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, p.prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

func (p *dbPool) tryLock(ctx context.Context, name string) (bool, error) {
	var got bool
	err := p.lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", poolLockClass, name).Scan(&got)
	return got, err
}

// release hands the database back to the pool.
func (p *dbPool) release(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unlockLocked(name)
}

func (p *dbPool) unlockLocked(name string) {
	delete(p.busy, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Fails only if the connection broke, which released the lock.
	p.lockConn.Exec(ctx, "SELECT pg_advisory_unlock($1, hashtext($2))", poolLockClass, name)
}

// create makes the pool's database name, which the caller holds, from the
// template.
func (p *dbPool) create(ctx context.Context, name string) error {
	return createFromTemplate(ctx, p.base, p.tmpl, name)
}

// expectedSettings is what createFromTemplate leaves in pg_database and
// pg_db_role_setting for a test database.
const expectedSettings = "t|-1||{synchronous_commit=off}|0"

// bloatLimit: a database grown by more than this beyond the template
// (the indexes of tables a test filled, which DELETE and VACUUM leave
// their pages) is emptied with TRUNCATE, which gives every table and
// index a new, empty file: dearer (the build of each empty index ends in
// an fsync of its file), so done only then.
const bloatLimit = 8 << 20

// smallHeap: an emptied table of fewer pages than this keeps them (VACUUM
// with TRUNCATE false). The planner sees the same as in the template: a
// table never vacuumed (reltuples -1, which reset restores) is planned as
// if it had at least 10 pages. A larger one is cut back to none, which
// costs a flush of the WAL per table.
const smallHeap = 10

// reset brings the database name, which the caller holds, back to the
// template's state; if its schema or its settings differ from the
// template's, it replaces it with a fresh copy.
//
// What it costs: a TRUNCATE of every table took 50 ms on an idle server
// and up to 450 ms while the suite ran (an fsync per index), about what
// the CREATE DATABASE it replaces costs there. So reset deletes the rows
// of the tables written since the previous reset (the activity counters
// it zeroed say which; where they cannot tell, those of more than zero
// pages) and vacuums them, without cutting a small table's pages off the
// file (each cut flushes the WAL), and restores the planner's estimates
// VACUUM rewrote. The schema check (a digest of the catalog, 20 ms idle,
// 200 ms loaded) runs only where the counters show writes to the catalog
// since (DDL), or cannot tell (counters lost in a crash, PostgreSQL
// before 15 whose counters are sent over UDP and may be lost).
func (p *dbPool) reset(ctx context.Context, name string) error {
	// Sessions left by a killed run, or by a test that leaked them, would
	// hold locks, keep rows visible to VACUUM, and write after the reset.
	if err := p.endSessions(ctx, name); err != nil {
		return err
	}
	p.mu.Lock()
	var settings string
	var size int64
	var counted bool
	err := p.lockConn.QueryRow(ctx, `SELECT concat_ws('|', d.datallowconn, d.datconnlimit, coalesce(d.datacl::text, ''),
			(SELECT s.setconfig::text FROM pg_db_role_setting s WHERE s.setdatabase = d.oid AND s.setrole = 0),
			(SELECT count(*) FROM pg_db_role_setting s WHERE s.setdatabase = d.oid AND s.setrole <> 0)),
			pg_database_size(d.oid), pg_stat_get_db_stat_reset_time(d.oid) IS NOT NULL
			FROM pg_database d WHERE d.datname = $1`, name).Scan(&settings, &size, &counted)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if settings != expectedSettings {
		return p.replace(ctx, name)
	}
	conn, err := pgx.Connect(ctx, withDatabase(p.base, name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	pg15 := serverMajor(conn) >= 15
	counted = counted && pg15
	// The writes to the catalogs (every relation below 16384 not shared
	// is one of initdb's: pg_catalog's, information_schema's or their
	// TOAST tables) and to the seeded tables, read from the activity
	// counters of each relation: the same sums as pg_stat_sys_tables and
	// pg_stat_user_tables give, whose rows compute every counter of every
	// table and its indexes (about 23 ms of the backend's CPU a reset
	// more, measured on the loaded development machine).
	var small, large []string
	var writes int64
	err = conn.QueryRow(ctx, `WITH t AS (
			SELECT t AS name, pg_relation_size(t::regclass) / current_setting('block_size')::int AS pages,
				coalesce(pg_stat_get_tuples_inserted(t::regclass) + pg_stat_get_tuples_updated(t::regclass)
					+ pg_stat_get_tuples_deleted(t::regclass), 0) AS writes
			FROM unnest($1::text[]) t)
		SELECT
			coalesce((SELECT array_agg(name ORDER BY name) FROM t WHERE CASE WHEN $3 THEN writes > 0 ELSE pages > 0 END AND pages < $4), '{}'),
			coalesce((SELECT array_agg(name ORDER BY name) FROM t WHERE CASE WHEN $3 THEN writes > 0 ELSE pages > 0 END AND pages >= $4), '{}'),
			(SELECT coalesce(sum(pg_stat_get_tuples_inserted(c.oid) + pg_stat_get_tuples_updated(c.oid)
					+ pg_stat_get_tuples_deleted(c.oid)), 0) FROM pg_class c
				WHERE c.oid < 16384 AND NOT c.relisshared AND c.relkind IN ('r', 't', 'm', 'p')
				AND c.oid NOT IN ('pg_statistic'::regclass, (SELECT reltoastrelid FROM pg_class WHERE oid = 'pg_statistic'::regclass)))
			+ (SELECT coalesce(sum(pg_stat_get_tuples_inserted(to_regclass(s)) + pg_stat_get_tuples_updated(to_regclass(s))
					+ pg_stat_get_tuples_deleted(to_regclass(s))), 0) FROM unnest($2::text[]) s)`,
		p.state.Empty, p.state.seededTables(), counted, smallHeap).Scan(&small, &large, &writes)
	if err != nil {
		return err
	}
	if writes > 0 || !counted {
		same, err := p.sameSchema(ctx, conn)
		if err != nil {
			return err
		}
		if !same {
			conn.Close(ctx)
			return p.replace(ctx, name)
		}
	}
	truncate := size > p.state.Size+bloatLimit
	// The simple protocol runs the statements of one query in one
	// transaction.
	simple := pgx.QueryExecModeSimpleProtocol
	stmts := []string{"SET session_replication_role = replica;\n" + p.state.emptySQL(truncate, append(small, large...))}
	// The catalogs reset rewrites are vacuumed too (the dead rows of the
	// previous reset's): the server may run no autovacuum.
	if truncate {
		small, large = nil, nil
	}
	stmts = append(stmts, "VACUUM (TRUNCATE false) "+strings.Join(append(small, "pg_class", "pg_statistic"), ", "))
	if len(large) > 0 {
		stmts = append(stmts, "VACUUM "+strings.Join(large, ", "))
	}
	restore := p.state.restoreSQL()
	if pg15 {
		// The activity counters last, once this session's own (its
		// deletes, its catalog writes) are flushed from the session to
		// where pg_stat_reset zeroes them: PostgreSQL 15 keeps them in
		// the session until it is idle, or ends.
		restore += "SELECT pg_stat_force_next_flush();\n"
	}
	stmts = append(stmts, restore, "SELECT pg_stat_reset()")
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt, simple); err != nil {
			return fmt.Errorf("%.60s: %w", stmt, err)
		}
	}
	return nil
}

// endSessions ends the sessions on the database name and waits until
// they are gone. The sessions of the test that just handed the database
// back are usually still exiting (a pool's Close does not wait for the
// server): it polls every few milliseconds, where pg_terminate_backend's
// own wait sleeps in steps of 100 ms.
func (p *dbPool) endSessions(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		p.mu.Lock()
		var left int
		err := p.lockConn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, name).Scan(&left)
		p.mu.Unlock()
		if err != nil {
			return fmt.Errorf("end the sessions on %s: %w", name, err)
		}
		if left == 0 {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// serverMajor returns the major version of the server of conn.
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version")
	if i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		v = v[:i]
	}
	n, _ := strconv.Atoi(v)
	return n
}

// sameSchema reports whether the database of conn has the template's
// schema and seeded rows.
func (p *dbPool) sameSchema(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var schema string
	if err := conn.QueryRow(ctx, schemaQuery).Scan(&schema); err != nil {
		return false, err
	}
	if schema != p.state.Schema {
		return false, nil
	}
	seeded, err := rowsDigest(ctx, conn, p.state.seededTables())
	if err != nil {
		return false, err
	}
	for table, digest := range seeded {
		if digest != p.state.Seeded[table] {
			return false, nil
		}
	}
	return true, nil
}

// replace drops the database name (renamed out of the pool at once, and
// dropped with the binary's other databases by Main) and makes it again
// from the template.
func (p *dbPool) replace(ctx context.Context, name string) error {
	trash := fmt.Sprintf("wgtest_%d_%d", os.Getpid(), counter.Add(1))
	if err := p.endSessions(ctx, name); err != nil {
		return err
	}
	p.mu.Lock()
	_, err := p.lockConn.Exec(ctx, "ALTER DATABASE "+name+" RENAME TO "+trash)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	dropStale(p.base, trash)
	return p.create(ctx, name)
}

// dropStale drops name once the binary's tests have ended (Main), or now
// if the package has no TestMain calling Main.
func dropStale(base, name string) {
	if mainRan.Load() {
		dropLater(name)
		return
	}
	dropDatabases(base, []string{name})
}

// DropPool drops the databases of the pool that no test binary uses, of
// every migrations digest (and those of dbtest's own tests' pools,
// wgpooltest_*, should a run have left them), and the template databases
// of other digests than this build's: the test databases dbtest keeps on the server between
// runs (`make drop-test-pool`). It logs what it dropped to logf.
func DropPool(ctx context.Context, logf func(format string, args ...any)) error {
	base, err := findServer()
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	names, err := queryStrings(ctx, conn, `SELECT datname FROM pg_database WHERE datname LIKE 'wgpool\_%' OR datname LIKE 'wgpooltest\_%' OR
		(datname LIKE 'workgraph\_tmpl\_%' AND datname <> $1) ORDER BY 1`, "workgraph_tmpl_"+db.MigrationsHash())
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", poolLockClass, name).Scan(&got); err != nil {
			return err
		}
		if !got {
			logf("%s is in use; kept", name)
			continue
		}
		if strings.HasPrefix(name, "workgraph_tmpl_") {
			if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" WITH is_template false"); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		logf("dropped %s", name)
	}
	return errors.Join(errs...)
}
