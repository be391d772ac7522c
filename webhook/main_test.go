package webhook_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock/clocktest"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
)

// TestMain drops the database dbtest.TestTx shares among this package's
// tests.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestNoWallClock(t *testing.T) { clocktest.NoWallClock(t) }

var projects atomic.Int64

// mustProject creates a project of its own for a test.
func mustProject(t *testing.T, e db.Executor) uuid.UUID {
	t.Helper()
	p, err := graph.NewService(e, nil).CreateProject(context.Background(),
		fmt.Sprintf("wh%d-%d", os.Getpid(), projects.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// mustRequest opens a person's hold (an attention request) on a new item.
func mustRequest(t *testing.T, e db.Executor, project uuid.UUID, question string) attention.Request {
	t.Helper()
	ctx := context.Background()
	it, err := graph.NewService(e, nil).CreateItem(ctx, project, graph.NewItem{Title: "Ship the release", CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := attention.NewService(e, nil, attention.Config{}).Hold(ctx, project, it.ID, question, "token:lead")
	if err != nil {
		t.Fatal(err)
	}
	return r
}
