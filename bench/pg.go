package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/embedpg"
)

// localURL is the PostgreSQL server tried when no URL is given.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// database is the PostgreSQL database a run uses.
type database struct {
	url    string
	source string
	close  func()
}

// openDatabase selects the database: the given URL as is; else a fresh
// database workgraph_bench_<n> on 127.0.0.1:5432; else the same on an
// embedded cluster. With statements (and no URL) it is always an embedded
// cluster of its own that loads pg_stat_statements. Either way it is
// migrated with db.Migrate.
func openDatabase(ctx context.Context, given string, embedded, keep, statements bool, log io.Writer) (*database, error) {
	d := &database{close: func() {}}
	switch {
	case given != "":
		d.url, d.source = given, "given URL"
	case !embedded && !statements && localAnswers(ctx):
		u, drop, err := freshDatabase(ctx, localURL, keep, log)
		if err != nil {
			return nil, err
		}
		d.url, d.source, d.close = u, "127.0.0.1:5432, fresh database", drop
	default:
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-bench-pg-%d", os.Getuid()))
		var settings map[string]string
		if statements {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-bench-pgss-%d", os.Getuid()))
			settings = statementsSettings
		}
		fmt.Fprintf(log, "starting an embedded PostgreSQL cluster in %s\n", dir)
		cluster, err := embedpg.Start(ctx, embedpg.Config{DataDir: dir, Settings: settings})
		if err != nil {
			return nil, err
		}
		u, drop, err := freshDatabase(ctx, cluster.URL("postgres"), keep, log)
		if err != nil {
			cluster.Stop(context.Background())
			return nil, err
		}
		d.url, d.source = u, "embedded cluster, fresh database"
		d.close = func() {
			drop()
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cluster.Stop(stopCtx)
		}
	}
	pool, err := db.Open(ctx, d.url, 2)
	if err != nil {
		d.close()
		return nil, err
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool, nil); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func localAnswers(ctx context.Context) bool {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, localURL)
	if err != nil {
		return false
	}
	c.Close(ctx)
	return true
}

// freshDatabase creates workgraph_bench_<n> on the server at base and
// returns its URL and a function dropping it (a no-op when keep).
func freshDatabase(ctx context.Context, base string, keep bool, log io.Writer) (string, func(), error) {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close(ctx)
	var name string
	for n := time.Now().Unix(); ; n++ {
		name = fmt.Sprintf("workgraph_bench_%d", n)
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
		if err == nil {
			break
		}
		if !isDuplicateDatabase(err) {
			return "", nil, fmt.Errorf("create database %s: %w", name, err)
		}
	}
	fmt.Fprintf(log, "database: %s\n", name)
	drop := func() {
		if keep {
			fmt.Fprintf(log, "kept database %s\n", name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	}
	return withDatabase(base, name), drop, nil
}

func isDuplicateDatabase(err error) bool {
	return err != nil && (containsCode(err, "42P04"))
}

func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// withPoolSize sets pgxpool's pool_max_conns in a database URL, so that a
// server started from the URL (in process or as a separate binary) gets the
// same pool size as the benchmark's direct runs.
func withPoolSize(rawURL string, n int) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", fmt.Sprint(n))
	u.RawQuery = q.Encode()
	return u.String()
}

// openPool opens a pool of at most n connections.
func openPool(ctx context.Context, url string, n int) (*pgxpool.Pool, error) {
	return db.Open(ctx, url, int32(n))
}

// postgresInfo reads the server settings that matter for the figures.
func postgresInfo(ctx context.Context, pool *pgxpool.Pool, source string) map[string]string {
	info := map[string]string{"source": source}
	var v string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err == nil {
		info["version"] = v
	}
	for _, s := range []string{"fsync", "synchronous_commit", "shared_buffers", "max_connections", "wal_level"} {
		if err := pool.QueryRow(ctx, "SHOW "+s).Scan(&v); err == nil {
			info[s] = v
		}
	}
	return info
}
