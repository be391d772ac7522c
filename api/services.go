package api

import (
	"github.com/workgraph-dev/workgraph/graph"
)

// Services are the domain services the API fronts.
type Services struct {
	Graph *graph.Service
}
