package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// MigrationLockID is the advisory lock key held while migrating, so that
// several replicas (or `workgraph migrate` runs) starting at once migrate
// one at a time. Earlier versions held it as a session lock; the
// transaction lock below conflicts with it, so mixed versions still
// serialise.
const MigrationLockID = 0x776f726b67726170 // "workgrap"

// xactLocker is goose's lock as a transaction-level advisory lock held by
// an open transaction on a connection of its own, from Lock to Unlock.
// Unlike a session lock (goose's default) it works through PgBouncer in
// transaction mode: the pooler keeps a server connection for a client
// while its transaction is open, so the lock is held on one server
// connection and released by the COMMIT (or by the server when the client
// dies and the pooler closes that connection), never left on a pooled
// connection that another client gets next. The holding transaction reads
// nothing and keeps no snapshot (see Lock), so a migration that builds an
// index CONCURRENTLY does not wait for it.
type xactLocker struct {
	mu   sync.Mutex
	conn *sql.Conn
	tx   *sql.Tx
}

// Lock waits for the migration lock (as long as ctx allows). It polls
// with pg_try_advisory_xact_lock, each try in a transaction of its own,
// rather than waiting in pg_advisory_xact_lock: a waiting statement holds
// a snapshot, and the lock holder's CREATE INDEX CONCURRENTLY waits for
// every older snapshot to go, so a migrator waiting inside the database
// would stall the one it waits for (a cycle through the client that
// PostgreSQL cannot see).
func (l *xactLocker) Lock(ctx context.Context, db *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tx != nil {
		return errors.New("db: migration lock already held")
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("db: migration lock: %w", err)
	}
	// The key is a literal: no parameters to bind.
	try := fmt.Sprintf("SELECT pg_try_advisory_xact_lock(%d)", int64(MigrationLockID))
	pause := 50 * time.Millisecond
	for {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			conn.Close()
			return fmt.Errorf("db: migration lock: %w", err)
		}
		var got bool
		// As a simple query: an extended-protocol query leaves its portal,
		// and with it a snapshot (backend_xmin), in the open transaction
		// until the transaction ends, which CREATE INDEX CONCURRENTLY
		// would wait for.
		if err := tx.QueryRowContext(ctx, try, pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil {
			tx.Rollback()
			conn.Close()
			return fmt.Errorf("db: migration lock: %w", err)
		}
		if got {
			l.conn, l.tx = conn, tx
			return nil
		}
		if err := tx.Rollback(); err != nil {
			conn.Close()
			return fmt.Errorf("db: migration lock: %w", err)
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return fmt.Errorf("db: migration lock: %w", ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// Unlock ends the holding transaction, which releases the lock.
func (l *xactLocker) Unlock(context.Context, *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tx == nil {
		return errors.New("db: migration lock not held")
	}
	err := l.tx.Commit()
	if cerr := l.conn.Close(); err == nil {
		err = cerr
	}
	l.conn, l.tx = nil, nil
	if err != nil {
		return fmt.Errorf("db: migration unlock: %w", err)
	}
	return nil
}
