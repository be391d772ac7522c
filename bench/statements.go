package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// With -statements, each workload is followed by PostgreSQL's own account
// of the statements it ran (pg_stat_statements, reset before the workload):
// where the database's time went, statement by statement. This is how a
// lookup that read a whole table on every lease route was found.

// statementsSettings are the server settings an embedded cluster needs for
// -statements.
var statementsSettings = map[string]string{
	"shared_preload_libraries": "pg_stat_statements",
	"pg_stat_statements.track": "top",
}

// StatementStat is one statement's share of a workload.
type StatementStat struct {
	Name    string  `json:"name"`
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	MeanUs  float64 `json:"mean_us"`
	Rows    int64   `json:"rows"`
}

// WorkloadStatements are the statements that took most of a workload's
// database time, most first.
type WorkloadStatements struct {
	Workload int             `json:"workload"`
	Top      []StatementStat `json:"top"`
}

// topStatementCount is how many statements a workload reports.
const topStatementCount = 12

// prepareStatements makes pg_stat_statements readable in the benchmark
// database, or says why it is not.
func prepareStatements(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return fmt.Errorf("-statements: %w", err)
	}
	if _, err := pool.Exec(ctx, "SELECT count(*) FROM pg_stat_statements"); err != nil {
		return fmt.Errorf("-statements: %w (start the server with shared_preload_libraries = 'pg_stat_statements', or give no database URL: the benchmark then starts an embedded cluster that loads it)", err)
	}
	return nil
}

func resetStatements(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// topStatements reads the statements of this database that took the most
// execution time since the last reset.
func topStatements(ctx context.Context, pool *pgxpool.Pool, n int) ([]StatementStat, error) {
	rows, err := pool.Query(ctx, `
		SELECT query, calls, total_exec_time, rows
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query NOT LIKE '%pg_stat_statements_reset%'
		ORDER BY total_exec_time DESC
		LIMIT $1`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (StatementStat, error) {
		var query string
		var s StatementStat
		if err := row.Scan(&query, &s.Calls, &s.TotalMs, &s.Rows); err != nil {
			return s, err
		}
		s.Name = statementName(query)
		s.TotalMs = round(s.TotalMs, 1)
		if s.Calls > 0 {
			s.MeanUs = round(s.TotalMs*1000/float64(s.Calls), 1)
		}
		return s, nil
	})
}

var (
	sqlcName = regexp.MustCompile(`^--\s*name:\s*(\w+)`)
	spaces   = regexp.MustCompile(`\s+`)
)

// statementName is the sqlc query name of a statement ("-- name: X ..."),
// else its first 60 characters on one line.
func statementName(query string) string {
	if m := sqlcName.FindStringSubmatch(strings.TrimSpace(query)); m != nil {
		return m[1]
	}
	s := spaces.ReplaceAllString(strings.TrimSpace(query), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func printStatements(w io.Writer, ws WorkloadStatements) {
	fmt.Fprintf(w, "    statements of workload %d, by execution time:\n", ws.Workload)
	fmt.Fprintf(w, "    %10s %12s %10s %10s  %s\n", "calls", "total ms", "mean us", "rows", "statement")
	for _, s := range ws.Top {
		fmt.Fprintf(w, "    %10d %12.1f %10.1f %10d  %s\n", s.Calls, s.TotalMs, s.MeanUs, s.Rows, s.Name)
	}
}
