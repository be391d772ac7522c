package dbq_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestClaimsLockOnlyWhatTheyTake: the transactional claim (ClaimItem) and
// the batch claim (ClaimItems) read two sources in claim order, the ready
// items not in backoff ("walk") and those whose backoff has passed and is
// not yet swept ("due"). A claim holds the rows it locked until its
// transaction ends, and concurrent claims skip them (SKIP LOCKED), so a
// claim must lock only the items it takes: a second claimer, while the
// first one's transaction is open, is given the items the first did not
// take, in claim order, whichever source comes first. (It races two
// transactions, so a database of its own.)
func TestClaimsLockOnlyWhatTheyTake(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t)
	ctx := context.Background()
	q := dbq.New()

	// items makes, in a project of its own, ready items of the given
	// priorities not in backoff, and items whose backoff has passed (not
	// swept) of the given priorities; it returns their ids by title.
	items := func(t *testing.T, walk, due []int) (uuid.UUID, map[string]uuid.UUID) {
		t.Helper()
		var project uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ($1) RETURNING id`,
			"locks-"+uuid.NewString()[:8]).Scan(&project); err != nil {
			t.Fatal(err)
		}
		ids := map[string]uuid.UUID{}
		add := func(title string, priority int, inBackoff bool) {
			var id uuid.UUID
			if err := pool.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by, failures, not_before, in_backoff)
				VALUES ($1, $2, $3, 'test', CASE WHEN $4 THEN 1 ELSE 0 END,
				        CASE WHEN $4 THEN now() - interval '1 minute' END, $4) RETURNING id`,
				project, title, priority, inBackoff).Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids[title] = id
		}
		for i, p := range walk {
			add("walk"+string(rune('1'+i)), p, false)
		}
		for i, p := range due {
			add("due"+string(rune('1'+i)), p, true)
		}
		return project, ids
	}
	// claim runs one claimer's statement in its own transaction, left
	// open until the test ends, and returns the items it took.
	type claimer func(t *testing.T, tx pgx.Tx, project uuid.UUID) []uuid.UUID
	single := func(t *testing.T, tx pgx.Tx, project uuid.UUID) []uuid.UUID {
		r, err := q.ClaimItem(ctx, db.CustomPlan(tx), dbq.ClaimItemParams{
			ProjectID: project, Labels: []string{}, Worker: "w", LeaseID: uuid.New(), Principal: "agent:w", TtlMs: 60000,
		})
		if err != nil {
			t.Fatal(err)
		}
		return []uuid.UUID{r.Lease.ItemID}
	}
	batch := func(t *testing.T, tx pgx.Tx, project uuid.UUID) []uuid.UUID {
		rows, err := q.ClaimItems(ctx, db.CustomPlan(tx), dbq.ClaimItemsParams{
			ProjectID: project, Labels: []string{}, Worker: "w", MaxItems: 2, Principal: "agent:w", TtlMs: 60000,
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []uuid.UUID
		for _, r := range rows {
			got = append(got, r.Item.ID)
		}
		return got
	}
	cases := []struct {
		name      string
		claim     claimer
		walk, due []int
		// first and second are the titles each claimer must take.
		first, second []string
	}{
		{"ClaimItem/WalkFirst", single, []int{10, 1}, []int{5}, []string{"walk1"}, []string{"due1"}},
		{"ClaimItem/DueFirst", single, []int{5, 1}, []int{10}, []string{"due1"}, []string{"walk1"}},
		{"ClaimItems/WalkFirst", batch, []int{10, 10, 1, 1}, []int{5, 5}, []string{"walk1", "walk2"}, []string{"due1", "due2"}},
		{"ClaimItems/DueFirst", batch, []int{5, 5, 1, 1}, []int{10, 10}, []string{"due1", "due2"}, []string{"walk1", "walk2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			project, ids := items(t, c.walk, c.due)
			for i, want := range [][]string{c.first, c.second} {
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				got := c.claim(t, tx, project)
				var wantIDs []uuid.UUID
				for _, title := range want {
					wantIDs = append(wantIDs, ids[title])
				}
				if !slices.Equal(got, wantIDs) {
					names := map[uuid.UUID]string{}
					for title, id := range ids {
						names[id] = title
					}
					var gotNames []string
					for _, id := range got {
						gotNames = append(gotNames, names[id])
					}
					t.Fatalf("claimer %d took %v, want %v (the first claimer's transaction is open)", i+1, gotNames, want)
				}
			}
		})
	}
}
