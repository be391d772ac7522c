package events_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var projects atomic.Int64

func project(t *testing.T, q db.DBTX) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := q.QueryRow(context.Background(), `INSERT INTO projects (name) VALUES ($1) RETURNING id`,
		fmt.Sprintf("ev%d-%d", os.Getpid(), projects.Add(1))).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAppendNumbersEventsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.TestTx(t)
	p := project(t, tx)
	item := uuid.New()
	var seqs []int64
	for _, typ := range []string{events.ItemCreated, events.LeaseGranted, events.LeaseEnded} {
		n, err := events.Append(ctx, tx, events.New{Project: p, Type: typ, Actor: "token:a", ItemID: &item,
			Payload: map[string]any{"outcome": "completed"}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, n)
	}
	if !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Fatalf("numbers not increasing: %v", seqs)
	}
	got, err := events.List(ctx, tx, p, events.Filter{After: seqs[0], UpTo: seqs[2]})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != seqs[1] || got[1].Type != events.LeaseEnded ||
		got[1].Actor != "token:a" || *got[1].ItemID != item || string(got[1].Payload) != `{"outcome": "completed"}` {
		t.Fatalf("List after the first = %+v", got)
	}
	one, err := events.List(ctx, tx, p, events.Filter{UpTo: seqs[2], Types: []string{events.LeaseGranted}})
	if err != nil || len(one) != 1 || one[0].Seq != seqs[1] {
		t.Fatalf("List of lease.granted = %+v, %v", one, err)
	}
	other := uuid.New()
	none, err := events.List(ctx, tx, p, events.Filter{UpTo: seqs[2], ItemID: &other})
	if err != nil || len(none) != 0 {
		t.Fatalf("List of another item = %+v, %v", none, err)
	}
}

func TestFilterBounds(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	for _, f := range []events.Filter{{Limit: -1}, {Limit: events.MaxLimit + 1}, {Types: []string{"item.exploded"}}} {
		_, err := events.List(context.Background(), tx, uuid.New(), f)
		if wgerr.CodeOf(err) != wgerr.CodeInvalid {
			t.Errorf("List(%+v) = %v, want invalid_argument", f, err)
		}
	}
}

func TestEventsAreAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.TestTx(t)
	p := project(t, tx)
	old := time.Now().Add(-48 * time.Hour)
	recent, err := events.Append(ctx, tx, events.New{Project: p, Type: events.ItemCreated, Actor: "system"})
	if err != nil {
		t.Fatal(err)
	}
	aged, err := events.Append(ctx, tx, events.New{Project: p, Type: events.ItemCreated, Actor: "system", At: &old})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(sql string, args ...any) {
		t.Helper()
		err := db.InTx(ctx, tx, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, sql, args...); return err })
		if err == nil {
			t.Errorf("%s: accepted", sql)
		}
	}
	refused(`UPDATE events SET actor = 'x' WHERE project_id = $1`, p)
	refused(`DELETE FROM events WHERE project_id = $1 AND seq = $2`, p, aged)
	if _, err := tx.Exec(ctx, `SET LOCAL workgraph.events_retention = 'on'`); err != nil {
		t.Fatal(err)
	}
	// Retention may delete an event older than a day, never a recent one.
	refused(`DELETE FROM events WHERE project_id = $1 AND seq = $2`, p, recent)
	tag, err := tx.Exec(ctx, `DELETE FROM events WHERE project_id = $1 AND seq = $2`, p, aged)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("retention delete of an old event: %v, %v", tag, err)
	}
}

// TestHorizonWaitsForEarlierNumbers: an event numbered before a committed
// one but not committed yet holds the horizon back until its transaction
// ends, so a reader that resumes after the newest event it saw cannot skip
// it. Needs commits from concurrent transactions: a database of its own.
func TestHorizonWaitsForEarlierNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	p := project(t, pool)

	slow, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	first, err := events.Append(ctx, slow, events.New{Project: p, Type: events.ItemCreated, Actor: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	var second int64
	err = db.InTx(ctx, pool, func(tx pgx.Tx) error {
		second, err = events.Append(ctx, tx, events.New{Project: p, Type: events.ItemCreated, Actor: "fast"})
		return err
	})
	if err != nil || second <= first {
		t.Fatalf("second append = %d, %v (first %d)", second, err, first)
	}

	// The fast event has committed, the slow one has not: no horizon yet.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = events.Horizon(short, pool)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Horizon with a transaction of an earlier number in progress = %v, want to wait", err)
	}

	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := events.Horizon(ctx, pool)
	if err != nil || h < second {
		t.Fatalf("Horizon after the commit = %d, %v, want >= %d", h, err, second)
	}
	got, err := events.List(ctx, pool, p, events.Filter{UpTo: h})
	if err != nil || len(got) != 2 || got[0].Seq != first || got[1].Seq != second {
		t.Fatalf("List up to the horizon = %+v, %v", got, err)
	}

	// A rolled-back event leaves a gap in the numbers and nothing else.
	err = db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := events.Append(ctx, tx, events.New{Project: p, Type: events.ItemCreated, Actor: "undone"}); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("the transaction committed")
	}
	h2, err := events.Horizon(ctx, pool)
	if err != nil || h2 <= h {
		t.Fatalf("Horizon after a rollback = %d, %v, want above %d", h2, err, h)
	}
	again, err := events.List(ctx, pool, p, events.Filter{After: second, UpTo: h2})
	if err != nil || len(again) != 0 {
		t.Fatalf("a rolled-back event was listed: %+v, %v", again, err)
	}
}

// TestHorizonIgnoresOtherDatabases: a transaction in progress in another
// database of the cluster (which cannot hold an event number of this one)
// does not hold the horizon back. Needs a database of its own beside the
// shared one.
func TestHorizonIgnoresOtherDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	other := dbtest.TestTx(t) // in the shared database, open until the test ends
	if _, err := other.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	p := project(t, pool)
	n, err := events.Append(ctx, pool, events.New{Project: p, Type: events.ItemCreated, Actor: "system"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h, err := events.Horizon(short, pool)
	if err != nil || h < n {
		t.Fatalf("Horizon with another database's transaction open = %d, %v, want >= %d", h, err, n)
	}
}

// TestHorizonIgnoresOtherWriters: a transaction that writes no event (here
// a project row) does not hold the horizon back, however long it runs.
func TestHorizonIgnoresOtherWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	p := project(t, pool)
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	project(t, other) // holds a transaction id until the end of the test
	n, err := events.Append(ctx, pool, events.New{Project: p, Type: events.ItemCreated, Actor: "a"})
	if err != nil {
		t.Fatal(err)
	}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h, err := events.Horizon(bounded, pool)
	if err != nil || h < n {
		t.Fatalf("Horizon with an unrelated transaction in progress = %d, %v, want >= %d", h, err, n)
	}
}

// TestReadByteBudget: events whose payloads cross the byte budget of a
// page (page.MaxBytes) end the read early: Next is the last event sent
// and More says to read again at once, and reading on from Next returns
// every event exactly once. A read of 1000 such events used to be one
// answer of a gigabyte, and a page cut short would have passed for the
// end of the log.
func TestReadByteBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t) // the horizon needs committed events
	p := project(t, pool)
	const n, big = 6, 900 << 10
	want := map[int64]bool{}
	for range n {
		seq, err := events.Append(ctx, pool, events.New{Project: p, Type: events.ItemCreated, Actor: "system",
			Payload: map[string]string{"x": strings.Repeat("x", big)}})
		if err != nil {
			t.Fatal(err)
		}
		want[seq] = true
	}
	r := events.NewReader(pool, nil)
	f := events.Filter{Limit: events.MaxLimit}
	reads := 0
	for {
		pg, err := r.Read(ctx, &p, f)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		for _, e := range pg.Events {
			if !want[e.Seq] {
				t.Fatalf("event %d read twice, or not ours", e.Seq)
			}
			delete(want, e.Seq)
		}
		if len(pg.Events) > 0 && pg.More() != (pg.Next == pg.Events[len(pg.Events)-1].Seq && len(want) > 0) {
			t.Fatalf("read %d: More %v with Next %d, last %d, %d left", reads, pg.More(), pg.Next, pg.Events[len(pg.Events)-1].Seq, len(want))
		}
		if !pg.More() {
			break
		}
		f.After = pg.Next
	}
	if reads < 2 || len(want) != 0 {
		t.Fatalf("%d reads, %d events never read", reads, len(want))
	}
}
