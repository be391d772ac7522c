package pgbouncer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/internal/pgbouncer"
)

// TestStartTwoAtOnce: two poolers started at once (as the server
// package's PgBouncer tests start theirs) are each their own: after the
// first stops, its URL no longer answers and the second's still does.
// With a port probed free and then bound by PgBouncer, both could pick the
// same port: the loser's PgBouncer exited, and its URL reached the
// winner's, which the winner's test then stopped under it.
func TestStartTwoAtOnce(t *testing.T) {
	t.Parallel()
	cfg := pgbouncer.Config{Backend: dbtest.ServerURL(t)}
	var bs [2]*pgbouncer.Bouncer
	errs := make(chan error, len(bs))
	for i := range bs {
		go func() {
			b, err := pgbouncer.Start(cfg)
			bs[i] = b
			errs <- err
		}()
	}
	var failed bool
	for range bs {
		if err := <-errs; errors.Is(err, pgbouncer.ErrNotInstalled) {
			t.Skip(err)
		} else if err != nil {
			t.Error(err)
			failed = true
		}
	}
	for _, b := range bs {
		if b != nil {
			t.Cleanup(b.Stop)
		}
	}
	if failed {
		t.FailNow()
	}
	if bs[0].URL == bs[1].URL {
		t.Fatalf("both poolers have the URL %s", bs[0].URL)
	}
	for i, b := range bs {
		if err := ping(b.URL); err != nil {
			t.Fatalf("pooler %d: %v", i, err)
		}
	}
	bs[0].Stop()
	if err := ping(bs[0].URL); err == nil {
		t.Error("the first pooler's URL still answers after it stopped")
	}
	if err := ping(bs[1].URL); err != nil {
		t.Errorf("the second pooler, after the first stopped: %v", err)
	}
}

// ping runs SELECT 1 on a connection of its own to url.
func ping(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var one int
	if err := c.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&one); err != nil {
		return err
	}
	if one != 1 {
		return errors.New("SELECT 1 answered something else")
	}
	return nil
}
