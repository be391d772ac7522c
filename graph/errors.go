package graph

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

func notFound(what string, id uuid.UUID) error {
	return wgerr.New(wgerr.CodeNotFound, "%s %s not found", what, id)
}

func conflictf(format string, args ...any) error {
	return &wgerr.Error{Code: wgerr.CodeConflict, Message: fmt.Sprintf(format, args...)}
}
