package graph

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/clock"
)

// Service is the graph's entry point for the API and the UI. Each method
// runs in its own transaction.
type Service struct {
	pool  *pgxpool.Pool
	clock clock.Clock
}

// NewService returns a Service on pool. A nil clk means the database clock.
func NewService(pool *pgxpool.Pool, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{pool: pool, clock: clk}
}
