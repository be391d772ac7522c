package graph

import (
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
)

// Service is the graph's entry point for the API, the UI and the other
// domain packages. Each method runs in its own transaction on a pool, or
// in a savepoint of the caller's transaction when the Service is on one
// (On).
type Service struct {
	exec  db.Executor
	clock clock.Clock
}

// NewService returns a Service on exec (a pool, or a transaction). A nil
// clk means the database clock.
func NewService(exec db.Executor, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{exec: exec, clock: clk}
}

// On returns a copy of s that runs on exec, e.g. inside a caller's
// transaction, so an operation of another package composes with the
// caller's own writes and commits or rolls back with them.
func (s *Service) On(exec db.Executor) *Service {
	c := *s
	c.exec = exec
	return &c
}
