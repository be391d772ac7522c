package dbq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestWorkerPagesReadTheirPage: a page of GET /v1/projects/{p}/workers
// (WorkerNamesPage, then WorkerOutcomesOf, WorkerUsageOf and
// LiveLeasesOfWorkers of its names) reads pages in proportion to the page,
// not to the project's workers or leases. A project of 100,000 workers
// (one ended lease each), one of them with 20,000 more, and 2,000 live
// leases: each statement of a page of 100 names from the middle of the
// list reads at most 600 pages (a few index pages per name: 405, 510, 15
// and 204 when written), where the leases table and leases_by_worker hold
// 4,637.
func TestWorkerPagesReadTheirPage(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	fill := []string{
		`INSERT INTO projects (name) VALUES ('fleet'), ('other')`,
		`INSERT INTO items (project_id, title, created_by)
		 SELECT p.id, 'item ' || g, 'test' FROM projects p, generate_series(1, 2002) g WHERE p.name = 'fleet'`,
		// 100,000 workers, each with one ended lease of the first item.
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		 SELECT i.project_id, i.id, g, 'w' || lpad(g::text, 6, '0'), 'test',
		        now() - interval '2 hours', now() - interval '1 hour', now() - interval '90 minutes', 'completed'
		 FROM items i, generate_series(1, 100000) g WHERE i.title = 'item 1'`,
		// One worker of a long history: 20,000 leases of the second item.
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		 SELECT i.project_id, i.id, g, 'w050050', 'test',
		        now() - interval '2 hours', now() - interval '1 hour', now() - interval '90 minutes', 'released'
		 FROM items i, generate_series(1, 20000) g WHERE i.title = 'item 2'`,
		// 2,000 live leases, one per item, of every 50th worker.
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		 SELECT i.project_id, i.id, 1, 'w' || lpad(((row_number() OVER (ORDER BY i.seq)) * 50)::text, 6, '0'), 'test',
		        now(), now() + interval '1 hour'
		 FROM items i WHERE i.title NOT IN ('item 1', 'item 2')`,
		`INSERT INTO worker_usage (project_id, worker, tokens_in)
		 SELECT p.id, 'w' || lpad(g::text, 6, '0'), g FROM projects p, generate_series(1, 100000, 7) g WHERE p.name = 'fleet'`,
		`ANALYZE`,
	}
	for _, stmt := range fill {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM projects WHERE name = 'fleet'`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	q := dbq.New()
	names, err := q.WorkerNamesPage(ctx, conn, dbq.WorkerNamesPageParams{ProjectID: project, After: "w050000", MaxRows: 101})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 101 || names[0] != "w050001" || names[100] != "w050101" {
		t.Fatalf("WorkerNamesPage after w050000: %d names, %v ... %v", len(names), names[:1], names[len(names)-1:])
	}
	steps := []struct {
		name string
		run  func() (int, error)
		want int
	}{
		{"WorkerNamesPage", func() (int, error) {
			return count(q.WorkerNamesPage(ctx, conn, dbq.WorkerNamesPageParams{ProjectID: project, After: "w050000", MaxRows: 101}))
		}, 101},
		// Two rows per name (its completed count; w050050 also released),
		// and one more for each of the two live leases among them.
		{"WorkerOutcomesOf", func() (int, error) {
			return count(q.WorkerOutcomesOf(ctx, conn, dbq.WorkerOutcomesOfParams{ProjectID: project, Workers: names}))
		}, 101 + 1 + 2},
		{"WorkerUsageOf", func() (int, error) {
			return count(q.WorkerUsageOf(ctx, conn, dbq.WorkerUsageOfParams{ProjectID: project, Workers: names}))
		}, 15},
		{"LiveLeasesOfWorkers", func() (int, error) {
			return count(q.LiveLeasesOfWorkers(ctx, conn, dbq.LiveLeasesOfWorkersParams{ProjectID: project, Workers: names, MaxRows: 500}))
		}, 2},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			n, err := s.run()
			if err != nil || n != s.want {
				t.Fatalf("%d rows, %v; want %d", n, err, s.want)
			}
			sql, args := trace.last()
			pages := explainPages(t, conn, sql, args)
			t.Logf("%s reads %v pages", s.name, pages)
			if pages > 600 {
				t.Errorf("%s reads %v pages, more than a page of workers needs", s.name, pages)
			}
		})
	}
	var all float64
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT (pg_relation_size('leases') + pg_relation_size('leases_by_worker')) / %d`, 8192)).Scan(&all); err != nil {
		t.Fatal(err)
	}
	t.Logf("leases and leases_by_worker: %v pages", all)
}
