// Package dbtest gives tests a real, migrated PostgreSQL database of their
// own.
//
// The server is found in this order: WORKGRAPH_TEST_DATABASE_URL; a server
// at 127.0.0.1:5432 (user postgres, trust auth); else an embedded cluster
// started from the installed PostgreSQL binaries in a shared directory under
// the system temp dir ($TMPDIR/workgraph-test-<uid>/pg), shared by the test
// binaries running at the same time. The test binary that starts it also
// starts a small background process that stops it once no test binary has
// used it for half a minute (see reaper_unix.go); StopEmbedded (`make
// stop-test-pg`) stops it by hand. Once per server a template database is
// migrated (named after the migrations' digest, so a changed migration gets
// a new template).
//
// URL and New hand a test a database of a pool of reusable ones
// (wgpool_<digest>_<n>, copies of the template kept on the server between
// runs; River's riverdbtest.TestSchema is the model): held by the test
// alone (an advisory lock, across test binaries) and reset to the
// template's state before it gets it, so tests run in parallel and may
// commit, LISTEN and use many connections, without the CREATE DATABASE
// each (see pool.go). A test that changes the schema or the database
// (migrates down and up, creates tables, alters a table's options or the
// database's settings) or depends on the database's history (pages on
// disk, statistics) takes a new copy of the template with FreshURL or
// Fresh instead, and says why. DropPool (`make drop-test-pool`) drops the
// pool's databases by hand.
//
// Most tests need less: TestTx hands a test a transaction on one database
// shared by its test binary (a database of the pool, held until the
// binary ends), rolled back when the test ends (River's
// riverdbtest.TestTxPgx is the model). New is for the tests that must
// commit, LISTEN or run concurrently.
package dbtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/embedpg"
)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error

	templateOnce sync.Once
	templateName string
	templateSt   *templateState
	templateErr  error

	counter atomic.Int64
)

// ServerURL returns the URL of the PostgreSQL server tests use (its
// "postgres" database), starting the embedded cluster if needed.
func ServerURL(tb testing.TB) string {
	tb.Helper()
	serverOnce.Do(func() { serverURL, serverErr = findServer() })
	if serverErr != nil {
		tb.Fatalf("dbtest: no PostgreSQL for tests: %v", serverErr)
	}
	return serverURL
}

func findServer() (string, error) {
	if u := os.Getenv("WORKGRAPH_TEST_DATABASE_URL"); u != "" {
		return u, nil
	}
	small := "" // the server at 5432 when it answers but allows too few connections
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err == nil {
		conn.Close()
		u := "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, u); err == nil {
			slots, err := connectionSlots(ctx, c)
			c.Close(ctx)
			if err == nil && slots >= SuiteConnections {
				return u, nil
			}
			small = u
		}
	}
	u, err := startEmbedded()
	if err != nil && small != "" {
		// No embedded cluster here (no PostgreSQL server binaries, say):
		// the small server is better than none. The suite may be refused
		// connections there, and TestServerHoldsTheSuite says why.
		fmt.Fprintf(os.Stderr, "dbtest: the server at 127.0.0.1:5432 allows fewer than %d connections and the embedded cluster did not start (%v): using 127.0.0.1:5432\n",
			SuiteConnections, err)
		return small, nil
	}
	return u, err
}

// SuiteConnections is how many connections a server must allow for the
// suite to use it: `make test-go` runs up to 12 tests at once (-p 3
// packages, -parallel 4 tests each), whose pools, test servers and
// listeners held up to 97-100 connections at once in runs on the 2-core
// development machine, mostly idle connections kept by the pools of
// tests still running. On a server that allows fewer (Debian's default
// max_connections is 100) a test is sometimes refused a connection ("too
// many clients already", which the code rightly answers as unavailable)
// and fails; the suite then runs on the embedded cluster, which allows
// 200 (embedpg's default).
const SuiteConnections = 150

// connectionSlots returns how many connections the server of c lets a
// superuser (the tests' user) open: max_connections, reserved slots
// included (replication has slots of its own since PostgreSQL 12).
func connectionSlots(ctx context.Context, c *pgx.Conn) (int, error) {
	var slots int
	err := c.QueryRow(ctx, `SELECT current_setting('max_connections')::int`).Scan(&slots)
	return slots, err
}

// startEmbedded starts (or reuses) the shared embedded test cluster.
func startEmbedded() (string, error) {
	dir, err := testDir()
	if err != nil {
		return "", err
	}
	// Held until this process exits: the reaper stops the cluster only
	// while no test binary holds it.
	if err := holdUsersLock(dir); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := embedpg.Start(ctx, embedpg.Config{DataDir: filepath.Join(dir, "pg"), Fast: true})
	if err != nil {
		return "", err
	}
	if !cluster.Reused() {
		startReaper(dir)
	}
	return cluster.URL("postgres"), nil
}

// testDir returns (creating it) the directory of the embedded test cluster,
// $TMPDIR/workgraph-test-<uid>, which must be a real directory owned by
// this user. It is mode 0755 so that, as root, the postgres user can reach
// the cluster inside it.
func testDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-test-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("dbtest: %w", err)
	}
	if err := checkOwnDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// StopEmbedded stops the embedded test cluster if it runs and no test binary
// is using it, logging to log (nil: silent). It is what `make stop-test-pg`
// runs.
func StopEmbedded(ctx context.Context, log *slog.Logger) error {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-test-%d", os.Getuid()))
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	if err := checkOwnDir(dir); err != nil {
		return err
	}
	return stopIfUnused(ctx, dir, log)
}

func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// template migrates (once per server and migration digest) the template
// database that the test databases copy, and returns its name and its
// state (nil if it could not be read: then the pool is off).
func template(tb testing.TB) (string, *templateState) {
	tb.Helper()
	base := ServerURL(tb)
	templateOnce.Do(func() { templateName, templateSt, templateErr = makeTemplate(base) })
	if templateErr != nil {
		tb.Fatalf("dbtest: template database: %v", templateErr)
	}
	return templateName, templateSt
}

func makeTemplate(base string) (string, *templateState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "workgraph_tmpl_" + db.MigrationsHash()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close(ctx)
	// Several test binaries start at once: one builds the template.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7250001)"); err != nil {
		return "", nil, err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7250001)")
	var ready bool
	var comment string
	err = admin.QueryRow(ctx, `SELECT true, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE datname = $1 AND datistemplate`, name).Scan(&ready, &comment)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", nil, err
	}
	if ready {
		if st := parseState(comment); st != nil {
			return name, st, nil
		}
		// Built before its state was kept: take it now. A user who may not
		// read it or comment on it (another's template) gets no pool.
		st, err := stateOf(ctx, withDatabase(base, name))
		if err != nil {
			return name, nil, nil
		}
		if commentState(ctx, admin, name, st) != nil {
			return name, nil, nil
		}
		return name, st, nil
	}
	building := name + "_build"
	admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", nil, err
	}
	pool, err := db.Open(ctx, withDatabase(base, building), 2)
	if err != nil {
		return "", nil, err
	}
	err = db.Migrate(ctx, pool, nil)
	pool.Close()
	if err != nil {
		return "", nil, err
	}
	st, err := stateOf(ctx, withDatabase(base, building))
	if err != nil {
		return "", nil, err
	}
	for _, stmt := range []string{
		"ALTER DATABASE " + building + " RENAME TO " + name,
		"ALTER DATABASE " + name + " WITH is_template true",
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return "", nil, err
		}
	}
	return name, st, commentState(ctx, admin, name, st)
}

// stateOf takes the state of the database at url (see templateState).
func stateOf(ctx context.Context, url string) (*templateState, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	return takeState(ctx, conn)
}

// commentState keeps st as the comment of the template database name.
func commentState(ctx context.Context, admin *pgx.Conn, name string, st *templateState) error {
	_, err := admin.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", name, quoteLiteral(st.marshal())))
	return err
}

// URL hands this test a migrated database of its own, in the template's
// state, and returns its URL: a database of the pool of reusable test
// databases (see pool.go), reset before the test and handed back to the
// pool after it, or, when the pool is off or all of its databases are in
// use, a fresh one (FreshURL). The test may commit, LISTEN, use many
// connections and run statements concurrently; it must not change the
// schema or the database's settings, roles, or rely on anything reset does
// not restore (the next test would see it): such a test uses FreshURL.
func URL(tb testing.TB) string {
	tb.Helper()
	if p := getPool(tb); p != nil {
		if name, ok := acquire(tb, p); ok {
			// Registered before the test's own cleanups, so run after
			// them: its pools are closed and its servers stopped.
			tb.Cleanup(func() { p.release(name) })
			return withDatabase(p.base, name)
		}
	}
	return FreshURL(tb)
}

// acquire takes a database of the pool p (false: all are in use).
func acquire(tb testing.TB, p *dbPool) (string, bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, ok, err := p.acquire(ctx)
	if err != nil {
		tb.Fatalf("dbtest: take a pooled database: %v", err)
	}
	return name, ok
}

// FreshURL creates a new migrated database for this test from the
// template and returns its URL. It is for a test that needs what a reused
// database cannot give: one that changes the schema (migrates down and
// up, creates tables), the database's settings or options, or depends on
// the database's history (statistics, counters) having never been
// touched. The test says why. The database is dropped after the test: by
// Main when the binary's tests have ended (the package's TestMain calls
// it), else when the test ends.
//
// Why Main drops them: PostgreSQL 15 forces an immediate checkpoint at
// every DROP DATABASE and the dropping session waits for it, and a
// checkpoint writes and fsyncs every dirty page of the server (every
// other test's database included). One drop per test made the suite's
// checkpointer the bottleneck (219 checkpoints, 243 s of them, in one run
// of the suite) and held each test's slot for a checkpoint at its end.
// Main drops the binary's databases at once, on several connections, so
// their checkpoint requests are served by one or two checkpoints, and on
// unix without waiting for them (dropDetached).
func FreshURL(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("wgtest_%d_%d", os.Getpid(), counter.Add(1))
	url := createDatabase(tb, name)
	DropLater(tb, name)
	return url
}

// DropLater drops the database name on ServerURL, which the test created,
// once the test has ended: with the binary's other databases, after its
// tests, when the package's TestMain calls Main (see URL for why), else
// when the test ends. Call it right after creating the database: the
// test's own cleanups, registered later, run before it (its pools are
// closed, its servers stopped).
func DropLater(tb testing.TB, name string) {
	tb.Helper()
	base := ServerURL(tb)
	tb.Cleanup(func() {
		if mainRan.Load() {
			dropLater(name)
			return
		}
		dropDatabases(base, []string{name})
	})
}

// dropLater queues name for Main to drop.
func dropLater(name string) {
	dropsMu.Lock()
	defer dropsMu.Unlock()
	pendingDrops = append(pendingDrops, name)
}

// dropDatabases drops the databases names, several at once (DROP DATABASE
// cannot run in a transaction or a batch, so each drop is a session's
// statement of its own).
func dropDatabases(base string, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// An error leaves a database behind on a throwaway server;
			// nothing a test could do about it.
			if c, err := pgx.Connect(ctx, base); err == nil {
				c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				c.Close(ctx)
			}
		}()
	}
	wg.Wait()
}

// createDatabase creates the database name from the template and returns
// its URL.
func createDatabase(tb testing.TB, name string) string {
	tb.Helper()
	tmpl, _ := template(tb)
	base := ServerURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createFromTemplate(ctx, base, tmpl, name); err != nil {
		tb.Fatalf("dbtest: %v", err)
	}
	return withDatabase(base, name)
}

// createFromTemplate creates the database name on the server at base as a
// copy of the template tmpl.
func createFromTemplate(ctx context.Context, base, tmpl, name string) error {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(ctx)
	for attempt := 0; ; attempt++ {
		// WAL_LOG copies the small template through the WAL; FILE_COPY
		// would checkpoint the whole server first, twice, which on a
		// server busy with other tests' writes takes seconds.
		_, err = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY WAL_LOG", name, tmpl))
		// Another CREATE DATABASE from the same template may hold it briefly.
		if err == nil || attempt > 50 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	// A test database is thrown away, never recovered after a crash of the
	// server: its sessions need not wait for each commit's WAL to reach the
	// disk (about half of a small commit's time on a loaded machine). What
	// a session sees is the same (a commit is visible to the others at
	// once either way); only durability across a server crash differs, and
	// the tests that crash PostgreSQL run a cluster of their own.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		return fmt.Errorf("configure database: %w", err)
	}
	return nil
}

// New hands this test a migrated database of its own (URL: reused, reset
// to the template's state) and returns a pool on it, closed when the test
// ends.
func New(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return open(tb, URL(tb))
}

// Fresh creates a new migrated database for this test (FreshURL: for a
// test that changes the schema or the database, or needs one never used)
// and returns a pool on it, closed when the test ends.
func Fresh(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return open(tb, FreshURL(tb))
}

// Unreachable returns a pool on an address nobody listens at (a port
// taken and given back), closed when the test ends: every statement fails
// at connect, as during a database outage, for tests of what a service
// does then.
func Unreachable(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://workgraph@"+addr+"/none?connect_timeout=2")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

func open(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, url, 20)
	if err != nil {
		tb.Fatalf("dbtest: open: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

var (
	sharedMu     sync.Mutex
	sharedPool   *pgxpool.Pool
	sharedName   string
	sharedPooled bool // sharedName is the pool's: handed back, not dropped

	dropsMu      sync.Mutex
	pendingDrops []string // databases of ended tests, for Main to drop
	mainRan      atomic.Bool
)

// Main runs a package's tests (call it from TestMain: os.Exit(dbtest.Main(m)))
// and afterwards hands the shared database of TestTx back to the pool and
// drops the databases the binary created and does not keep: those of
// FreshURL and Fresh, the shared one if it is not the pool's, the pool's
// databases of another migrations digest (see FreshURL for why they wait
// until now).
// Where it can (unix), it hands the drops to a process of their own and
// returns without waiting for them (see dropDetached), so the checkpoint
// that every DROP DATABASE waits for no longer holds the package's `go
// test -p` slot: in one run of the suite the binaries spent 122 s of their
// 335 s in those final drops.
func Main(m *testing.M) int {
	mainRan.Store(true)
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPool != nil {
		sharedPool.Close()
		if sharedPooled {
			thePool.release(sharedName)
		} else {
			dropLater(sharedName)
		}
	}
	dropsMu.Lock()
	names := pendingDrops
	pendingDrops = nil
	dropsMu.Unlock()
	if len(names) > 0 && !dropDetached(serverURL, names) {
		dropDatabases(serverURL, names)
	}
	return code
}

// TestTx returns a transaction on a migrated database shared by the tests
// of this test binary (taken from the pool on first use, as URL, and held
// until Main), rolled back when the test ends: nothing a test writes is seen by
// another, and the test costs a BEGIN instead of a CREATE DATABASE. The
// package's TestMain must call Main.
//
// A transaction suits a test that runs its statements one after another
// on one connection. A test that must commit (to see the effect from
// another session), LISTEN, take advantage of SKIP LOCKED or advisory
// locks across sessions, or run statements concurrently uses New instead,
// and says why. Inside the transaction now() is its start and does not
// move; clock_timestamp() does.
//
// Parallel tests of one binary write to one database: rows under a unique
// constraint (a project's name) must differ between tests, or the second
// waits for the first to roll back.
func TestTx(tb testing.TB) pgx.Tx {
	tb.Helper()
	if !mainRan.Load() {
		tb.Fatal("dbtest: TestTx needs the package's TestMain to call dbtest.Main (it drops the shared database)")
	}
	pool := shared(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		tb.Fatalf("dbtest: begin: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// An error here (the test closed its transaction already, or
		// the connection broke) leaves nothing behind to clean.
		_ = tx.Rollback(ctx)
	})
	return tx
}

// shared returns the pool on this binary's shared database, taking the
// database on first use.
func shared(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPool != nil {
		return sharedPool
	}
	var name, url string
	if p := getPool(tb); p != nil {
		if name, sharedPooled = acquire(tb, p); sharedPooled {
			url = withDatabase(p.base, name)
		}
	}
	if url == "" {
		name = fmt.Sprintf("wgtx_%d", os.Getpid())
		url = createDatabase(tb, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, url, 16)
	if err != nil {
		tb.Fatalf("dbtest: open: %v", err)
	}
	sharedPool, sharedName = pool, name
	return pool
}
