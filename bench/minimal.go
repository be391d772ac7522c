package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The minimal pair: the least SQL a lease queue can do on one table, the
// floor the server's own statements are compared with. A claim is one
// UPDATE picking the first ready row with FOR UPDATE SKIP LOCKED and bumping
// its epoch; completion and heartbeat are UPDATEs fenced on id, epoch and
// expiry. Each statement is its own transaction, as the server's are.

const minimalTable = "bench_minimal_queue"

var errMinimalLost = errors.New("minimal pair: fenced update matched no row")

// setupMinimal (re)creates the minimal pair's table and loads n ready rows.
func setupMinimal(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, fmt.Sprintf(`
		DROP TABLE IF EXISTS %[1]s;
		CREATE TABLE %[1]s (
			id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			state      smallint    NOT NULL DEFAULT 0, -- 0 ready, 1 leased, 2 done
			epoch      bigint      NOT NULL DEFAULT 0,
			worker     text,
			expires_at timestamptz,
			result     jsonb
		);
		CREATE INDEX %[1]s_ready ON %[1]s (id) WHERE state = 0;`, minimalTable))
	return err
}

func loadMinimal(ctx context.Context, pool *pgxpool.Pool, n int) error {
	_, err := pool.Exec(ctx, fmt.Sprintf(
		"INSERT INTO %s (state) SELECT 0 FROM generate_series(1, $1::int)", minimalTable), n)
	return err
}

func dropMinimal(ctx context.Context, pool *pgxpool.Pool) {
	pool.Exec(ctx, "DROP TABLE IF EXISTS "+minimalTable)
}

var (
	minimalClaimSQL = fmt.Sprintf(`
UPDATE %[1]s SET state = 1, epoch = epoch + 1, worker = $1, expires_at = now() + interval '15 minutes'
WHERE id = (SELECT id FROM %[1]s WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, epoch`, minimalTable)
	minimalHeartbeatSQL = fmt.Sprintf(`
UPDATE %s SET expires_at = now() + interval '15 minutes'
WHERE id = $1 AND epoch = $2 AND state = 1 AND expires_at > now()`, minimalTable)
	minimalCompleteSQL = fmt.Sprintf(`
UPDATE %s SET state = 2, result = $3
WHERE id = $1 AND epoch = $2 AND state = 1 AND expires_at > now()`, minimalTable)
	minimalReleaseSQL = fmt.Sprintf(`
UPDATE %s SET state = 0, worker = NULL, expires_at = NULL
WHERE id = $1 AND epoch = $2 AND state = 1 AND expires_at > now()`, minimalTable)
)

// minimalAgent runs the minimal pair over a pool.
type minimalAgent struct {
	pool   *pgxpool.Pool
	worker string
}

func (a *minimalAgent) claim(ctx context.Context) (heldLease, error) {
	var l heldLease
	err := a.pool.QueryRow(ctx, minimalClaimSQL, a.worker).Scan(&l.row, &l.epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, errEmpty
	}
	return l, err
}

func (a *minimalAgent) fenced(ctx context.Context, sql string, args ...any) error {
	tag, err := a.pool.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return errMinimalLost
	}
	return nil
}

func (a *minimalAgent) heartbeat(ctx context.Context, l heldLease) error {
	return a.fenced(ctx, minimalHeartbeatSQL, l.row, l.epoch)
}

func (a *minimalAgent) complete(ctx context.Context, l heldLease) error {
	return a.fenced(ctx, minimalCompleteSQL, l.row, l.epoch, `{"ok":true}`)
}

func (a *minimalAgent) release(ctx context.Context, l heldLease) error {
	return a.fenced(ctx, minimalReleaseSQL, l.row, l.epoch)
}
