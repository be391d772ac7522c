package api

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// gatedAPI mounts the API on a test server over a database of its own
// (the gates' tests hold requests open while others commit), without rate
// limits; tune sets the gate under test. It returns the API, its server,
// and the graph and auth services the test makes its data with.
func gatedAPI(t *testing.T, tune func(*Config)) (*API, *httptest.Server, *graph.Service, *auth.Service) {
	t.Helper()
	pool := dbtest.New(t)
	authSvc := auth.NewService(pool, nil)
	graphSvc := graph.NewService(pool, nil)
	cfg := Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Pool: pool, Auth: authSvc, RateLimit: -1,
		Services: Services{
			Graph:     graphSvc,
			Leases:    lease.NewService(pool, nil, lease.Config{}),
			Attention: attention.NewService(pool, nil, attention.Config{}),
		},
	}
	tune(&cfg)
	a := New(cfg)
	e := echo.New()
	a.Mount(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return a, srv, graphSvc, authSvc
}
