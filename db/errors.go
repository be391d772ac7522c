package db

import (
	"context"
	"errors"

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
//   - query canceled, deadline exceeded  -> unavailable
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
		case "57014":
			return &wgerr.Error{Code: wgerr.CodeUnavailable, Message: "the database statement was cancelled", Err: err}
		}
	}
	return &wgerr.Error{Code: wgerr.CodeInternal, Message: "internal error", Err: err}
}
