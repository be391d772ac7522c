package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size Open uses when neither the caller nor
// the URL (pool_max_conns) names one. pgx's own default (4 on a small
// machine) would make every request queue behind a few commits.
const DefaultMaxConns = 32

// Open connects a pool to the database at url and checks that it answers.
// maxConns > 0 sets the pool size; otherwise the URL's pool_max_conns, else
// DefaultMaxConns.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	return OpenWithSettings(ctx, url, maxConns, nil)
}

// OpenWithSettings is Open with session settings (e.g. statement_timeout)
// that every connection of the pool starts with.
func OpenWithSettings(ctx context.Context, url string, maxConns int32, settings map[string]string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: parse database url: %w", err)
	}
	switch {
	case maxConns > 0:
		cfg.MaxConns = maxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "workgraph"
	for k, v := range settings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	// Prepare each statement once per connection, unless the URL names a
	// mode (default_query_exec_mode): behind PgBouncer in transaction mode
	// a prepared statement is not there on the next transaction's server
	// connection (see PoolerURL).
	if !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
	cfg.HealthCheckPeriod = 30 * time.Second
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerUUID(conn.TypeMap())
		registerUTC(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("db: ping: %w", err)
	}
	return pool, nil
}

// OpenAsyncCommit opens a second, small pool (maxConns connections) on the
// database of pool whose sessions commit with synchronous_commit=off: their
// commits do not wait for the WAL to reach disk, and a database crash may
// lose the last instants of them. Only bookkeeping whose loss is harmless
// belongs there (the API's Idempotency-Key records).
func OpenAsyncCommit(ctx context.Context, pool *pgxpool.Pool, maxConns int32) (*pgxpool.Pool, error) {
	cfg := pool.Config()
	cfg.MaxConns = maxConns
	cfg.MinConns = 0
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	return p, nil
}

// PoolerExecMode is the pgx query exec mode PoolerURL chooses for a URL
// that goes through PgBouncer in transaction mode: statements are
// described once per connection (cached) and run unnamed, so no prepared
// statement is left on a server connection that another client's
// transaction may get next. Measured against describe_exec and exec in
// docs/operations.md.
const PoolerExecMode = "cache_describe"

// PoolerURL returns url with default_query_exec_mode=PoolerExecMode added
// unless the URL names a mode already.
func PoolerURL(url string) string {
	if strings.Contains(url, "default_query_exec_mode") {
		return url
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "default_query_exec_mode=" + PoolerExecMode
}
