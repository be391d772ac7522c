package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the embedded migration files.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// MigrationsHash is a short digest of every embedded migration; the test
// harness names its template database after it.
func MigrationsHash() string {
	h := sha256.New()
	entries, _ := fs.ReadDir(Migrations(), ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(Migrations(), n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// provider returns goose's migrator on the database of pool, through a
// database/sql handle of its own whose connections prepare nothing on the
// server (pgx's exec mode "exec": an unnamed statement per query, or a
// simple query when it has no parameters), so that migrating works
// through PgBouncer in transaction mode as well as directly, whatever
// exec mode pool's URL names. Migrations are rare: the cost of describing
// each statement again does not matter. The lock is xactLocker.
func provider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	cc := pool.Config().ConnConfig.Copy()
	cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	sqlDB := stdlib.OpenDB(*cc)
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(),
		goose.WithLocker(&xactLocker{}))
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("db: migrations: %w", err)
	}
	return p, sqlDB, nil
}

// Migrate applies every pending migration. Concurrent callers (replicas
// starting together) are serialised by an advisory lock (MigrationLockID).
// pool may be direct or go through PgBouncer in transaction mode.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	p, sqlDB, err := provider(pool)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("db: migrate up: %w", err)
	}
	if log != nil && len(results) > 0 {
		// One line says what changed; each migration is a debug line (a
		// first start applies every one of them).
		var took time.Duration
		for _, r := range results {
			log.Debug("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
			took += r.Duration
		}
		log.Info("migrations applied", "count", len(results), "from", results[0].Source.Version,
			"to", results[len(results)-1].Source.Version, "duration", took)
	}
	return nil
}

// MigrateDown rolls back the most recent migration.
func MigrateDown(ctx context.Context, pool *pgxpool.Pool) error {
	p, sqlDB, err := provider(pool)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if _, err := p.Down(ctx); err != nil {
		return fmt.Errorf("db: migrate down: %w", err)
	}
	return nil
}

// MigrateDownTo rolls back every migration above version (a test's way to
// stand at an older schema, whatever has been added since).
func MigrateDownTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	p, sqlDB, err := provider(pool)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if _, err := p.DownTo(ctx, version); err != nil {
		return fmt.Errorf("db: migrate down to %d: %w", version, err)
	}
	return nil
}

// MigrationStatus writes one line per migration (applied or pending) to w.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	p, sqlDB, err := provider(pool)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	statuses, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("db: migrate status: %w", err)
	}
	for _, s := range statuses {
		applied := "pending"
		if s.State == goose.StateApplied {
			applied = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(w, "%05d  %-40s %s\n", s.Source.Version, s.Source.Path, applied)
	}
	return nil
}
