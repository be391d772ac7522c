package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestPipeline: a pipeline's statements commit together or not at all, a
// later statement sees an earlier one's write, and a follower whose answer
// would be read is refused before anything is sent. A database of its
// own: a pipeline commits.
func TestPipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	count := func(t *testing.T, name string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(name string) func(q db.DBTX) error {
		return func(q db.DBTX) error {
			var id uuid.UUID
			return q.QueryRow(ctx, "INSERT INTO projects (name) VALUES ($1) RETURNING id", name).Scan(&id)
		}
	}

	t.Run("OK", func(t *testing.T) {
		err := db.Pipeline(ctx, pool, insert("pipe-a"), func(q db.DBTX) error {
			// Sees the lead's row: renames it.
			_, err := q.Exec(ctx, "UPDATE projects SET name = 'pipe-b' WHERE name = 'pipe-a'")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := count(t, "pipe-a"), count(t, "pipe-b"); a != 0 || b != 1 {
			t.Errorf("after the pipeline: %d rows pipe-a (want 0), %d rows pipe-b (want 1)", a, b)
		}
	})

	t.Run("ErrFollowerRollsBackTheLead", func(t *testing.T) {
		err := db.Pipeline(ctx, pool, insert("pipe-c"), func(q db.DBTX) error {
			_, err := q.Exec(ctx, "INSERT INTO projects (name) VALUES ('pipe-b')") // taken
			return err
		})
		if !errors.Is(err, wgerr.AlreadyExists) {
			t.Errorf("got %v, want already_exists", err)
		}
		if n := count(t, "pipe-c"); n != 0 {
			t.Errorf("the lead's row committed although a follower failed (%d rows)", n)
		}
	})

	t.Run("ErrLeadStopsTheFollowers", func(t *testing.T) {
		err := db.Pipeline(ctx, pool, insert("pipe-b"), func(q db.DBTX) error {
			_, err := q.Exec(ctx, "INSERT INTO projects (name) VALUES ('pipe-d')")
			return err
		})
		if !errors.Is(err, wgerr.AlreadyExists) {
			t.Errorf("got %v, want already_exists", err)
		}
		if n := count(t, "pipe-d"); n != 0 {
			t.Errorf("a follower committed although the lead failed (%d rows)", n)
		}
	})

	t.Run("ErrFollowerReadsAnAnswer", func(t *testing.T) {
		err := db.Pipeline(ctx, pool, insert("pipe-e"), insert("pipe-f"))
		if err == nil {
			t.Fatal("a follower that reads its answer was accepted")
		}
		if a, b := count(t, "pipe-e"), count(t, "pipe-f"); a != 0 || b != 0 {
			t.Errorf("a refused pipeline wrote %d and %d rows", a, b)
		}
	})
}
