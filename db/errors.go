package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Translate is the one place where database errors become workgraph error
// kinds. Errors that already carry a kind, and nil, pass through unchanged.
//
//   - pgx.ErrNoRows                      -> not_found
//   - unique violation (23505)           -> already_exists
//   - foreign-key violation (23503)      -> not_found (a referenced row is missing)
//   - check / not-null violation         -> invalid_argument
//   - serialization failure, deadlock    -> conflict (retry the request)
//   - history guard triggers (WG001)     -> conflict (history is immutable)
//   - a claim that lost a write scope's race (WG002, see ScopeRace)
//     -> conflict
//   - a fence that raises (WG003)        -> lease_lost (see FenceLost)
//   - a completion of an item that waits for unfinished work (WG007,
//     see ItemBlocked)                   -> blocked
//   - a precondition that raises (WG006, see Precheck) -> the kind its
//     DETAIL names (unauthenticated, conflict; idempotency_taken ->
//     request_in_progress), see PrecheckRefusal
//   - query canceled, deadline exceeded  -> unavailable
//     (a pool acquire that timed out too)
//   - the database connection lost or refused (see ConnectionLost)
//     -> unavailable
//   - anything else                      -> internal, cause kept for logs
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var we *wgerr.Error
	if errors.As(err, &we) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &wgerr.Error{Code: wgerr.CodeNotFound, Message: "not found", Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &wgerr.Error{Code: wgerr.CodeUnavailable, Message: "the request was cancelled or timed out", Err: err}
	}
	if ConnectionLost(err) {
		return &wgerr.Error{Code: wgerr.CodeUnavailable, Message: "the database is unavailable; retry", Err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return &wgerr.Error{Code: wgerr.CodeAlreadyExists, Message: "already exists", Err: err}
		case "23503":
			return &wgerr.Error{Code: wgerr.CodeNotFound, Message: "a referenced record does not exist", Err: err}
		case "23514", "23502", "22001", "22P02", "22023":
			return &wgerr.Error{Code: wgerr.CodeInvalid, Message: "the value is not acceptable: " + pgErr.ConstraintName, Err: err}
		case "40001", "40P01":
			return &wgerr.Error{Code: wgerr.CodeConflict, Message: "concurrent update; retry the request", Err: err}
		case "WG001":
			return &wgerr.Error{Code: wgerr.CodeConflict, Message: pgErr.Message, Err: err}
		case "WG002":
			return &wgerr.Error{Code: wgerr.CodeConflict, Message: "a concurrent claim took an overlapping write scope; retry", Err: err}
		case "WG003":
			return &wgerr.Error{Code: wgerr.CodeLeaseLost, Message: pgErr.Message, Err: err}
		case "WG007":
			return &wgerr.Error{Code: wgerr.CodeBlocked, Message: pgErr.Message, Err: err}
		case "WG006":
			return &wgerr.Error{Code: precheckCode(pgErr.Detail), Message: pgErr.Message, Err: err}
		case "57014":
			return &wgerr.Error{Code: wgerr.CodeUnavailable, Message: "the database statement was cancelled", Err: err}
		}
	}
	return &wgerr.Error{Code: wgerr.CodeInternal, Message: "internal error", Err: err}
}

// Violates reports whether err (translated or not) is a violation of the
// named constraint (a check, unique or foreign key), so that a domain
// package can answer the refusal in its own words, naming the field.
func Violates(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == constraint
}

// StatementCancelled reports whether err (translated or not) is a
// statement PostgreSQL cancelled (57014: its statement_timeout, or a
// cancel request).
func StatementCancelled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// FenceLost reports whether err (translated or not) is a fenced statement
// that raised because its fence did not hold (WG003, lease_fence_held):
// the statement, and whatever was pipelined after it, changed nothing.
func FenceLost(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "WG003"
}

// ItemBlocked reports whether err (translated or not) is a completion
// that raised because its item waits for a dependency or an open child
// (WG007, item_finishable, migration 00064): the statement, and whatever
// was pipelined after it, changed nothing, and the lease is still live.
func ItemBlocked(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "WG007"
}

// ConnectionLost reports whether err means the database could not be
// reached or the connection to it was lost, not that the statement was
// wrong: a refused or failed connection attempt (whatever the reason, e.g.
// a database not accepting connections), a connection reset, cut or
// closed (EOF, "conn closed", a closed pool), a network timeout, and the
// server's own SQLSTATE classes 08 (connection exception) and 57P0x
// (operator intervention: terminated by an administrator, shutting down,
// cannot connect now) and 53300 (too many connections). Such a request may
// be retried: a transaction cut short never committed, and a commit whose
// answer was lost is answered by the fences on retry.
func ConnectionLost(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true // whatever the server said: no connection, no statement ran
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c := pgErr.Code
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P0") || c == "53300"
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), pgconn.Timeout(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgxpool answers an acquire from a closed pool with puddle's
	// ErrClosedPool; matched by its text so db need not import puddle.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "closed pool" {
			return true
		}
	}
	return false
}

// ScopeRace reports whether err is wg_lock_scopes' refusal (WG002,
// migration 00041): the claim's statement took an item whose write scope a
// concurrent claim granted first, and wrote nothing. The claim may run
// again (its next snapshot sees that lease, and skips the item).
func ScopeRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "WG002"
}

// precheckCode is the error kind of a Precheck's refusal.
func precheckCode(detail string) wgerr.Code {
	switch detail {
	case "unauthenticated":
		return wgerr.CodeUnauthenticated
	case "conflict":
		return wgerr.CodeConflict
	case "idempotency_taken":
		return wgerr.CodeInProgress
	}
	return wgerr.CodeInternal
}
