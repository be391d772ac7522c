package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// followSetup starts a follower on a database of its own (events must
// commit to be seen, and other tests' commits would move the horizon).
func followSetup(t *testing.T) (*pgxpool.Pool, *events.Follower, *events.Reader) {
	t.Helper()
	pool := dbtest.New(t)
	f := events.NewFollower(pool, time.Millisecond, nil)
	f.Advanced.Init()
	f.Polled.Init()
	f.Start(context.Background())
	t.Cleanup(f.Stop)
	return pool, f, events.NewReader(pool, f)
}

func mustAppend(t *testing.T, pool *pgxpool.Pool, p uuid.UUID, typ string) int64 {
	t.Helper()
	n, err := events.Append(context.Background(), pool, events.New{Project: p, Type: typ, Actor: "system"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFollowerWakesWaiters: a waiter blocked on the horizon it read is
// woken by an event committed later, and its read returns exactly that
// event; another project's event wakes it too but reads as nothing.
func TestFollowerWakesWaiters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _, r := followSetup(t)
	p, other := project(t, pool), project(t, pool)
	first, err := r.Read(ctx, &p, events.Filter{})
	if err != nil || len(first.Events) != 0 {
		t.Fatalf("first read = %+v, %v", first, err)
	}

	type result struct {
		page events.Page
		err  error
	}
	done := make(chan result, 1)
	go func() {
		page, err := r.ReadWait(ctx, &p, events.Filter{After: first.Next}, time.Minute)
		done <- result{page, err}
	}()
	mustAppend(t, pool, other, events.ItemCreated)
	n := mustAppend(t, pool, p, events.AttentionOpened)
	got := <-done
	if got.err != nil || len(got.page.Events) != 1 || got.page.Events[0].Seq != n || got.page.Next < n {
		t.Fatalf("ReadWait = %+v, %v, want the one event %d", got.page, got.err, n)
	}
}

// TestReadPages: a full page resumes after its last event, a short one
// at the horizon; following Next reads every event once.
func TestReadPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _, r := followSetup(t)
	p := project(t, pool)
	var want []int64
	for range 5 {
		want = append(want, mustAppend(t, pool, p, events.ItemCreated))
	}
	var seen []int64
	after := int64(0)
	for range 4 {
		page, err := r.Read(ctx, &p, events.Filter{After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			seen = append(seen, e.Seq)
		}
		if len(page.Events) == 2 && page.Next != page.Events[1].Seq {
			t.Fatalf("a full page resumes at %d, want its last event %d", page.Next, page.Events[1].Seq)
		}
		if len(page.Events) < 2 && page.Next != page.Horizon {
			t.Fatalf("a short page resumes at %d, want the horizon %d", page.Next, page.Horizon)
		}
		after = page.Next
	}
	if len(seen) != len(want) {
		t.Fatalf("read %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("read %v, want %v", seen, want)
		}
	}
	if _, err := r.Read(ctx, &p, events.Filter{Limit: events.MaxLimit + 1}); err == nil {
		t.Fatal("a limit above the maximum was accepted")
	}
}

// TestReadWaitEndsEmpty: with nothing written, a long poll ends with an
// empty page that resumes where it began, not an error.
func TestReadWaitEndsEmpty(t *testing.T) {
	t.Parallel()
	pool, _, r := followSetup(t)
	p := project(t, pool)
	page, err := r.ReadWait(context.Background(), &p, events.Filter{After: 0}, 20*time.Millisecond)
	if err != nil || len(page.Events) != 0 {
		t.Fatalf("ReadWait with nothing written = %+v, %v", page, err)
	}
}

// TestFollowerStop: a waiter is released with ErrStopped when the
// follower stops, and later waits return it at once.
func TestFollowerStop(t *testing.T) {
	t.Parallel()
	_, f, _ := followSetup(t)
	done := make(chan error, 1)
	go func() {
		_, err := f.Wait(context.Background(), 1<<62)
		done <- err
	}()
	f.Polled.Wait(t) // the waiter made it poll
	f.Stop()
	if err := <-done; !errors.Is(err, events.ErrStopped) {
		t.Fatalf("Wait across Stop = %v, want ErrStopped", err)
	}
	if _, err := f.Wait(context.Background(), 0); !errors.Is(err, events.ErrStopped) {
		t.Fatalf("Wait after Stop = %v, want ErrStopped", err)
	}
}

// TestReadRefusesAfterPastTheLog: a read after a number the log has not
// reached (a client's stored position from a database since restored from
// an older backup, or made up) is invalid_argument naming after, instead
// of an empty page and a wait that skips every event up to that number
// once they are written. A position the log did reach, its newest
// included, reads as before.
func TestReadRefusesAfterPastTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _, r := followSetup(t)
	p := project(t, pool)
	last := mustAppend(t, pool, p, events.ItemCreated)
	for _, wait := range []time.Duration{0, time.Second} {
		_, err := r.ReadWait(ctx, &p, events.Filter{After: last + 1000}, wait)
		var we *wgerr.Error
		if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "after" {
			t.Fatalf("read after %d with the log at %d (wait %s): %v, want invalid_argument on after", last+1000, last, wait, err)
		}
	}
	page, err := r.Read(ctx, &p, events.Filter{After: last})
	if err != nil || len(page.Events) != 0 {
		t.Fatalf("read after the newest number: %+v, %v", page, err)
	}
}
