package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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
// nothing and takes no snapshot between statements, so a migration that
// builds an index CONCURRENTLY does not wait for it.
type xactLocker struct {
	mu   sync.Mutex
	conn *sql.Conn
	tx   *sql.Tx
}

// Lock waits for the migration lock (as long as ctx allows).
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
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return fmt.Errorf("db: migration lock: %w", err)
	}
	// The key is a literal: a statement without parameters goes as a
	// simple query, which no pooler mode or exec mode can get wrong.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", int64(MigrationLockID))); err != nil {
		tx.Rollback()
		conn.Close()
		return fmt.Errorf("db: migration lock: %w", err)
	}
	l.conn, l.tx = conn, tx
	return nil
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
