package attention_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

type fixture struct {
	ctx     context.Context
	conn    db.Executor // the test's transaction, rolled back when it ends
	clock   *clock.Stub
	svc     *attention.Service
	project uuid.UUID
}

const window = 10 * time.Minute

var projectCounter atomic.Int64

// setup runs the test in a transaction rolled back when it ends.
func setup(t *testing.T) fixture {
	t.Helper()
	return setupOn(t, dbtest.TestTx(t))
}

// setupDB gives the test a database of its own.
func setupDB(t *testing.T) fixture {
	t.Helper()
	return setupOn(t, dbtest.New(t))
}

func setupOn(t *testing.T, pool db.Executor) fixture {
	t.Helper()
	ctx := context.Background()
	var t0 time.Time
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	var project uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ($1) RETURNING id", fmt.Sprintf("p%d", projectCounter.Add(1))).Scan(&project); err != nil {
		t.Fatal(err)
	}
	return fixture{ctx: ctx, conn: pool, clock: clk, project: project,
		svc: attention.NewService(pool, clk, attention.Config{ContinuityWindow: window})}
}

// item inserts an open item directly (the graph package is not under test).
func (f fixture) item(t *testing.T, title string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := f.conn.QueryRow(f.ctx,
		"INSERT INTO items (project_id, title, created_by) VALUES ($1, $2, 'test') RETURNING id",
		f.project, title).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type itemRow struct {
	Ready           bool
	OpenAttention   int32
	PreferredWorker *string
	PreferredUntil  *time.Time
}

func (f fixture) row(t *testing.T, id uuid.UUID) itemRow {
	t.Helper()
	var r itemRow
	err := f.conn.QueryRow(f.ctx,
		"SELECT ready, open_attention, preferred_worker, preferred_until FROM items WHERE project_id = $1 AND id = $2",
		f.project, id).Scan(&r.Ready, &r.OpenAttention, &r.PreferredWorker, &r.PreferredUntil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// open opens a request through Open inside a caller's transaction, as
// package lease does.
func (f fixture) open(t *testing.T, item uuid.UUID, in attention.NewRequest) (attention.Request, error) {
	t.Helper()
	var out attention.Request
	err := db.InTx(f.ctx, f.conn, func(tx pgx.Tx) error {
		var err error
		out, err = f.svc.On(tx).Open(f.ctx, f.project, item, in)
		return err
	})
	return out, err
}

func (f fixture) mustOpen(t *testing.T, item uuid.UUID, in attention.NewRequest) attention.Request {
	t.Helper()
	r, err := f.open(t, item, in)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func ask(q string, blocking bool) attention.NewRequest {
	return attention.NewRequest{Question: q, Blocking: blocking, RequestedBy: "agent-1"}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	f := setup(t)

	t.Run("OK", func(t *testing.T) {
		item := f.item(t, "write the parser")
		r := f.mustOpen(t, item, attention.NewRequest{
			Question: "  Which grammar?  ", SuggestedAnswers: []string{"PEG", "LALR"},
			Context: []byte(`{"file":"a.go"}`), Blocking: true, RequestedBy: "agent-1",
		})
		if r.Question != "Which grammar?" || r.ItemTitle != "write the parser" || r.State != attention.StateOpen ||
			r.Source != attention.SourceWorker || r.Reason != attention.ReasonQuestion || len(r.SuggestedAnswers) != 2 {
			t.Fatalf("request = %+v", r)
		}
		if got := f.row(t, item); got.Ready || got.OpenAttention != 1 {
			t.Fatalf("item after blocking request = %+v, want not ready with open_attention 1", got)
		}
	})
	t.Run("NonBlockingLeavesItemReady", func(t *testing.T) {
		item := f.item(t, "x")
		f.mustOpen(t, item, ask("fyi?", false))
		if got := f.row(t, item); !got.Ready || got.OpenAttention != 0 {
			t.Fatalf("item = %+v, want ready", got)
		}
	})
	t.Run("ErrQuestionRequired", func(t *testing.T) {
		item := f.item(t, "x")
		_, err := f.open(t, item, ask("   ", true))
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
		if got := f.row(t, item); got.OpenAttention != 0 {
			t.Fatalf("open_attention = %d after refused request", got.OpenAttention)
		}
	})
	t.Run("ErrInvalidContext", func(t *testing.T) {
		_, err := f.open(t, f.item(t, "x"), attention.NewRequest{Question: "q", Context: []byte("{"), RequestedBy: "a"})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
	})
	t.Run("ErrItemNotFound", func(t *testing.T) {
		_, err := f.open(t, uuid.New(), ask("q", true))
		if !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
	t.Run("ErrItemFinished", func(t *testing.T) {
		item := f.item(t, "x")
		if _, err := f.conn.Exec(f.ctx, "UPDATE items SET status = 'done', finished_at = now() WHERE id = $1", item); err != nil {
			t.Fatal(err)
		}
		for _, blocking := range []bool{true, false} {
			_, err := f.open(t, item, ask("q", blocking))
			if !errors.Is(err, wgerr.Conflict) {
				t.Fatalf("blocking=%v: err = %v, want conflict", blocking, err)
			}
		}
	})
}

func TestResolve(t *testing.T) {
	t.Parallel()
	f := setup(t)

	t.Run("OK", func(t *testing.T) {
		item := f.item(t, "x")
		r := f.mustOpen(t, item, ask("A or B?", true))
		got, err := f.svc.Resolve(f.ctx, f.project, r.ID, "B", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != attention.StateResolved || *got.Answer != "B" || *got.ResolvedBy != "alice" ||
			got.ResolvedAt == nil || !got.ResolvedAt.Equal(*f.clock.Now()) {
			t.Fatalf("resolved = %+v", got)
		}
		if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 {
			t.Fatalf("item after last resolution = %+v, want ready", row)
		}
		stored, err := f.svc.Get(f.ctx, f.project, r.ID)
		if err != nil || stored.State != attention.StateResolved || *stored.Answer != "B" {
			t.Fatalf("stored = %+v, %v", stored, err)
		}
	})
	t.Run("ErrResolvedTwice", func(t *testing.T) {
		item := f.item(t, "x")
		r := f.mustOpen(t, item, ask("q", true))
		if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "first", "alice"); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Resolve(f.ctx, f.project, r.ID, "second", "bob")
		if !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("second resolve: err = %v, want conflict", err)
		}
		_, err = f.svc.Dismiss(f.ctx, f.project, r.ID, "bob", "")
		if !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("dismiss after resolve: err = %v, want conflict", err)
		}
		stored, _ := f.svc.Get(f.ctx, f.project, r.ID)
		if *stored.Answer != "first" || *stored.ResolvedBy != "alice" {
			t.Fatalf("stored = %+v, want the first answer", stored)
		}
		if row := f.row(t, item); row.OpenAttention != 0 {
			t.Fatalf("open_attention = %d, want 0 (decremented once)", row.OpenAttention)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.svc.Resolve(f.ctx, f.project, uuid.New(), "a", "alice")
		if !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
	t.Run("ErrOtherProject", func(t *testing.T) {
		r := f.mustOpen(t, f.item(t, "x"), ask("q", true))
		_, err := f.svc.Resolve(f.ctx, uuid.New(), r.ID, "a", "alice")
		if !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
	t.Run("ErrEmptyAnswer", func(t *testing.T) {
		r := f.mustOpen(t, f.item(t, "x"), ask("q", true))
		_, err := f.svc.Resolve(f.ctx, f.project, r.ID, " ", "alice")
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
	})
	// An answer or a question of nothing but invisible characters (a zero
	// width space, a byte order mark, with spaces) is empty: a person
	// would read nothing.
	t.Run("ErrInvisibleAnswer", func(t *testing.T) {
		item := f.item(t, "x")
		r := f.mustOpen(t, item, ask("q", true))
		_, err := f.svc.Resolve(f.ctx, f.project, r.ID, " \u200b\ufeff\u2060 ", "alice")
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
		if stored, _ := f.svc.Get(f.ctx, f.project, r.ID); stored.State != attention.StateOpen {
			t.Fatalf("the request is %s, want open", stored.State)
		}
		if _, err := f.open(t, item, ask("\u200b\u200d", true)); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("open with an invisible question: err = %v, want invalid_argument", err)
		}
		q := ask("pick", true)
		q.SuggestedAnswers = []string{"yes", "\u200b"}
		if _, err := f.open(t, item, q); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("open with an invisible suggested answer: err = %v, want invalid_argument", err)
		}
		if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "\u200bok", "alice"); err != nil {
			t.Fatalf("an answer with text: %v", err)
		}
	})
	t.Run("TwoRequestsResolvingOneLeavesItWaiting", func(t *testing.T) {
		item := f.item(t, "x")
		r1 := f.mustOpen(t, item, ask("first?", true))
		r2 := f.mustOpen(t, item, ask("second?", true))
		if _, err := f.svc.Resolve(f.ctx, f.project, r1.ID, "yes", "alice"); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); row.Ready || row.OpenAttention != 1 {
			t.Fatalf("after one of two = %+v, want waiting", row)
		}
		if _, err := f.svc.Dismiss(f.ctx, f.project, r2.ID, "alice", "not needed"); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 {
			t.Fatalf("after both = %+v, want ready", row)
		}
	})
	t.Run("LastResolutionWithDependencyStillBlocked", func(t *testing.T) {
		item := f.item(t, "x")
		// A prerequisite still open and an open child, as the graph
		// package would count them.
		if _, err := f.conn.Exec(f.ctx, "UPDATE items SET unmet_dependencies = 1, open_children = 1 WHERE id = $1", item); err != nil {
			t.Fatal(err)
		}
		r := f.mustOpen(t, item, ask("q", true))
		if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "a", "alice"); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); row.Ready || row.OpenAttention != 0 {
			t.Fatalf("item = %+v, want not ready (dependency and child still open)", row)
		}
		if _, err := f.conn.Exec(f.ctx, "UPDATE items SET unmet_dependencies = 0, open_children = 0 WHERE id = $1", item); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); !row.Ready {
			t.Fatalf("item = %+v, want ready once the graph gates open", row)
		}
	})
	t.Run("NonBlockingDoesNotTouchItem", func(t *testing.T) {
		item := f.item(t, "x")
		r := f.mustOpen(t, item, ask("q", false))
		if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "a", "alice"); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 {
			t.Fatalf("item = %+v", row)
		}
	})
}

func TestContinuityPreference(t *testing.T) {
	t.Parallel()
	f := setup(t)

	t.Run("WindowStartsAtLastResolution", func(t *testing.T) {
		item := f.item(t, "x")
		in := ask("q", true)
		in.Worker = "agent-7"
		r1 := f.mustOpen(t, item, in)
		r2 := f.mustOpen(t, item, ask("another", true))
		row := f.row(t, item)
		if row.PreferredWorker == nil || *row.PreferredWorker != "agent-7" || row.PreferredUntil != nil {
			t.Fatalf("pending preference = %+v, want agent-7 without a window yet", row)
		}
		f.clock.Advance(time.Hour)
		f.svc.Resolve(f.ctx, f.project, r1.ID, "a", "alice")
		if row := f.row(t, item); row.PreferredUntil != nil {
			t.Fatalf("window started with a request still open: %+v", row)
		}
		f.clock.Advance(time.Minute)
		f.svc.Resolve(f.ctx, f.project, r2.ID, "b", "alice")
		row = f.row(t, item)
		want := f.clock.Now().Add(window)
		if row.PreferredUntil == nil || !row.PreferredUntil.Equal(want) || *row.PreferredWorker != "agent-7" {
			t.Fatalf("preference = %+v, want agent-7 until %v", row, want)
		}
	})
	t.Run("HoldWithoutWorkerSetsNoPreference", func(t *testing.T) {
		item := f.item(t, "x")
		r, err := f.svc.Hold(f.ctx, f.project, item, "", "alice")
		if err != nil {
			t.Fatal(err)
		}
		f.svc.Resolve(f.ctx, f.project, r.ID, "go", "alice")
		if row := f.row(t, item); row.PreferredWorker != nil || row.PreferredUntil != nil {
			t.Fatalf("preference = %+v, want none", row)
		}
	})
}

func TestHold(t *testing.T) {
	t.Parallel()
	f := setup(t)

	t.Run("OK", func(t *testing.T) {
		item := f.item(t, "deploy")
		r, err := f.svc.Hold(f.ctx, f.project, item, "", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != attention.SourcePerson || r.Reason != attention.ReasonHold || !r.Blocking || r.Question == "" ||
			r.RequestedBy != "alice" || r.LeaseID != nil {
			t.Fatalf("hold = %+v", r)
		}
		if row := f.row(t, item); row.Ready {
			t.Fatal("held item is ready")
		}
		if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "go ahead", "alice"); err != nil {
			t.Fatal(err)
		}
		if row := f.row(t, item); !row.Ready {
			t.Fatal("item not ready after the hold was resolved")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.svc.Hold(f.ctx, f.project, uuid.New(), "", "alice")
		if !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
}

func TestList(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := f.item(t, "a"), f.item(t, "b")
	var ids []uuid.UUID
	for i := 0; i < 5; i++ {
		item := a
		if i%2 == 1 {
			item = b
		}
		ids = append(ids, f.mustOpen(t, item, ask(fmt.Sprintf("q%d", i), true)).ID)
	}
	if _, err := f.svc.Resolve(f.ctx, f.project, ids[0], "x", "alice"); err != nil {
		t.Fatal(err)
	}

	t.Run("OpenOldestFirstPaged", func(t *testing.T) {
		open := attention.StateOpen
		var got []uuid.UUID
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := f.svc.List(f.ctx, f.project, attention.Filter{State: &open, Cursor: cursor, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Requests {
				if r.State != attention.StateOpen || r.ItemTitle == "" {
					t.Fatalf("listed %+v", r)
				}
				got = append(got, r.ID)
			}
			if page.NextCursor == "" {
				break
			}
			if pages > 5 {
				t.Fatal("pagination does not end")
			}
			cursor = page.NextCursor
		}
		if fmt.Sprint(got) != fmt.Sprint(ids[1:]) {
			t.Fatalf("got %v, want %v", got, ids[1:])
		}
	})
	t.Run("ByItem", func(t *testing.T) {
		page, err := f.svc.List(f.ctx, f.project, attention.Filter{ItemID: &b})
		if err != nil || len(page.Requests) != 2 {
			t.Fatalf("page = %+v, %v; want item b's 2 requests", page, err)
		}
	})
	t.Run("ForItem", func(t *testing.T) {
		page, err := f.svc.ForItem(f.ctx, f.project, a, "", 0)
		if hist := page.Requests; err != nil || len(hist) != 3 || hist[0].ID != ids[0] || hist[0].State != attention.StateResolved ||
			page.NextCursor != "" {
			t.Fatalf("history = %+v, %v", page, err)
		}
	})
	t.Run("ErrBadCursor", func(t *testing.T) {
		_, err := f.svc.List(f.ctx, f.project, attention.Filter{Cursor: "nope"})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
	})
	t.Run("ErrLimit", func(t *testing.T) {
		_, err := f.svc.List(f.ctx, f.project, attention.Filter{Limit: 100000})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
	})
	t.Run("ProjectOf", func(t *testing.T) {
		p, err := f.svc.ProjectOf(f.ctx, ids[2])
		if err != nil || p != f.project {
			t.Fatalf("ProjectOf = %v, %v", p, err)
		}
		if _, err := f.svc.ProjectOf(f.ctx, uuid.New()); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("unknown: err = %v, want not_found", err)
		}
	})
}

func TestHistoryImmutable(t *testing.T) {
	t.Parallel()
	// Its own database: the refused statements would abort a test
	// transaction.
	f := setupDB(t)
	r := f.mustOpen(t, f.item(t, "x"), ask("q", true))
	if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "a", "alice"); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"UPDATE attention_requests SET answer = 'rewritten' WHERE id = $1",
		"UPDATE attention_requests SET state = 'open', resolved_at = NULL WHERE id = $1",
		"DELETE FROM attention_requests WHERE id = $1",
	} {
		if _, err := f.conn.Exec(f.ctx, stmt, r.ID); err == nil {
			t.Errorf("%q succeeded on a resolved request", stmt)
		}
	}
	stored, _ := f.svc.Get(f.ctx, f.project, r.ID)
	if *stored.Answer != "a" {
		t.Fatalf("answer = %q", *stored.Answer)
	}
}
