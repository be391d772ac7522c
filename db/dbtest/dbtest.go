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
// a new template); each call to New creates a fresh database from it, so
// tests run in parallel and may commit, LISTEN and use many connections.
//
// Most tests need less: TestTx hands a test a transaction on one database
// shared by its test binary, rolled back when the test ends (River's
// riverdbtest.TestTxPgx is the model). New is for the tests that must
// commit, LISTEN or run concurrently.
package dbtest

import (
	"context"
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
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err == nil {
		conn.Close()
		u := "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, u); err == nil {
			c.Close(ctx)
			return u, nil
		}
	}
	return startEmbedded()
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
// database that New copies.
func template(tb testing.TB) string {
	tb.Helper()
	base := ServerURL(tb)
	templateOnce.Do(func() { templateName, templateErr = makeTemplate(base) })
	if templateErr != nil {
		tb.Fatalf("dbtest: template database: %v", templateErr)
	}
	return templateName
}

func makeTemplate(base string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "workgraph_tmpl_" + db.MigrationsHash()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	// Several test binaries start at once: one builds the template.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7250001)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7250001)")
	var ready bool
	err = admin.QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	building := name + "_build"
	admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	pool, err := db.Open(ctx, withDatabase(base, building), 2)
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx, pool, nil)
	pool.Close()
	if err != nil {
		return "", err
	}
	for _, stmt := range []string{
		"ALTER DATABASE " + building + " RENAME TO " + name,
		"ALTER DATABASE " + name + " WITH is_template true",
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return "", err
		}
	}
	return name, nil
}

// URL creates a fresh migrated database for this test and returns its URL.
// The database is dropped after the test: by Main when the binary's tests
// have ended (the package's TestMain calls it), else when the test ends.
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
func URL(tb testing.TB) string {
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
			sharedMu.Lock()
			pendingDrops = append(pendingDrops, name)
			sharedMu.Unlock()
			return
		}
		dropDatabases(base, []string{name})
	})
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
	tmpl := template(tb)
	base := ServerURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("dbtest: connect: %v", err)
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
		tb.Fatalf("dbtest: create database: %v", err)
	}
	// A test database is thrown away, never recovered after a crash of the
	// server: its sessions need not wait for each commit's WAL to reach the
	// disk (about half of a small commit's time on a loaded machine). What
	// a session sees is the same (a commit is visible to the others at
	// once either way); only durability across a server crash differs, and
	// the tests that crash PostgreSQL run a cluster of their own.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		tb.Fatalf("dbtest: configure database: %v", err)
	}
	return withDatabase(base, name)
}

// FreshURL creates a new migrated database for this test from the
// template and returns its URL (as URL does), for a test that needs a new
// one: it changes the schema (migrates down and up, creates tables), the
// database's settings or table options, or depends on the database's
// physical history (the pages a statement reads). The test says why.
func FreshURL(tb testing.TB) string {
	tb.Helper()
	return URL(tb)
}

// Fresh is New on a database of FreshURL.
func Fresh(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return New(tb)
}

// New creates a fresh migrated database for this test and returns a pool on
// it, closed when the test ends.
func New(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := URL(tb)
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
	pendingDrops []string // databases of ended tests, for Main to drop
	mainRan      atomic.Bool
)

// Main runs a package's tests (call it from TestMain: os.Exit(dbtest.Main(m)))
// and afterwards drops the databases the binary created: the shared one of
// TestTx and those of URL and New (see URL for why they wait until now).
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
	names := pendingDrops
	pendingDrops = nil
	if sharedPool != nil {
		sharedPool.Close()
		names = append(names, sharedName)
	}
	if len(names) > 0 && !dropDetached(serverURL, names) {
		dropDatabases(serverURL, names)
	}
	return code
}

// TestTx returns a transaction on a migrated database shared by the tests
// of this test binary (created from the template on first use, dropped by
// Main), rolled back when the test ends: nothing a test writes is seen by
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

// shared returns the pool on this binary's shared database, creating the
// database on first use.
func shared(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPool != nil {
		return sharedPool
	}
	name := fmt.Sprintf("wgtx_%d", os.Getpid())
	url := createDatabase(tb, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := db.Open(ctx, url, 16)
	if err != nil {
		tb.Fatalf("dbtest: open: %v", err)
	}
	sharedPool, sharedName = pool, name
	return pool
}
