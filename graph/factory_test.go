package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// fixture is what most tests need: a transaction rolled back when the test
// ends (or a database of its own), a service on it with a stub clock, and
// one project.
type fixture struct {
	conn    db.Executor
	svc     *Service
	clk     *clock.Stub
	project uuid.UUID
}

var projectCounter atomic.Int64

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// setup runs the test in a transaction rolled back at its end.
func setup(t *testing.T) fixture {
	t.Helper()
	return setupOn(t, dbtest.TestTx(t))
}

// setupDB gives the test a database of its own, for a test whose
// statements run concurrently on several connections and commit.
func setupDB(t *testing.T) fixture {
	t.Helper()
	return setupOn(t, dbtest.New(t))
}

func setupOn(t *testing.T, exec db.Executor) fixture {
	t.Helper()
	clk := clock.NewStub(t0)
	svc := NewService(exec, clk)
	p, err := svc.CreateProject(context.Background(), fmt.Sprintf("p%d", projectCounter.Add(1)))
	if err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	return fixture{conn: exec, svc: svc, clk: clk, project: p.ID}
}

// itemOpts are the factory's inputs; zero values get defaults.
type itemOpts struct {
	Title     string
	Priority  int32
	Parent    *uuid.UUID
	DependsOn []uuid.UUID
	Labels    []string
}

var itemCounter atomic.Int64

// mustItem creates an item through the service.
func (f fixture) mustItem(t *testing.T, o itemOpts) Item {
	t.Helper()
	if o.Title == "" {
		o.Title = fmt.Sprintf("item %d", itemCounter.Add(1))
	}
	it, err := f.svc.CreateItem(context.Background(), f.project, NewItem{
		Title: o.Title, Priority: o.Priority, ParentID: o.Parent, DependsOn: o.DependsOn,
		Labels: o.Labels, CreatedBy: "test",
	})
	if err != nil {
		t.Fatalf("CreateItem(%q): %v", o.Title, err)
	}
	return it
}

// mustGet reads an item through the service.
func (f fixture) mustGet(t *testing.T, id uuid.UUID) Item {
	t.Helper()
	it, err := f.svc.Item(context.Background(), f.project, id)
	if err != nil {
		t.Fatalf("Item(%s): %v", id, err)
	}
	return it
}

// finishTx marks an open item done or cancelled (result {"ok":true}) and
// releases its dependents and parent, as a completion or a cancel does.
func (f fixture) finishTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, st Status) error {
	n, err := finishItems(ctx, tx, f.clk.Now(), f.project, []uuid.UUID{id}, st, json.RawMessage(`{"ok":true}`))
	if err == nil && n != 1 {
		err = fmt.Errorf("item %s was not open", id)
	}
	return err
}

// mustFinish finishes an item in its own transaction.
func (f fixture) mustFinish(t *testing.T, id uuid.UUID, st Status) {
	t.Helper()
	err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
		return f.finishTx(context.Background(), tx, id, st)
	})
	if err != nil {
		t.Fatalf("finish(%s, %s): %v", id, st, err)
	}
}

// exec runs SQL directly (to set counters the lease and attention packages
// own).
func (f fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// counters reads an item's stored readiness counters.
type counters struct {
	Unmet, Children, Attention int32
	Ready                      bool
}

func (f fixture) counters(t *testing.T, id uuid.UUID) counters {
	t.Helper()
	var c counters
	err := f.conn.QueryRow(context.Background(),
		`SELECT unmet_dependencies, open_children, open_attention, ready FROM items WHERE project_id = $1 AND id = $2`,
		f.project, id).Scan(&c.Unmet, &c.Children, &c.Attention, &c.Ready)
	if err != nil {
		t.Fatalf("counters(%s): %v", id, err)
	}
	return c
}

func wantState(t *testing.T, it Item, want State) {
	t.Helper()
	if it.State != want {
		t.Fatalf("item %q: state %s, want %s (blocked_by %+v)", it.Title, it.State, want, it.BlockedBy)
	}
}

type uuidT = uuid.UUID

func newID() uuid.UUID { return uuid.New() }
