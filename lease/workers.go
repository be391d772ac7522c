package lease

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/page"
)

// WorkerPage is a page of a project's workers (every worker label that
// ever held a lease), by name, read in one snapshot so that its parts
// agree: each worker's counts and usage, and the live leases of the
// page's workers with their activity (Active and Activity in the same
// order: by worker, then claim order). Next is the cursor of the following
// page ("" on the last).
type WorkerPage struct {
	Stats    []WorkerStat
	Usage    map[string]Usage
	Active   []Lease
	Activity []Activity
	Next     string
}

// WorkerPageLeases bounds the live leases a WorkerPage carries: the
// workers of a page may hold many (a worker label is any string a claim
// names, and one token may hold a thousand leases); each worker's Active
// count says how many it holds, and the lease history filtered by worker
// lists them all.
const WorkerPageLeases = page.Max

// workerList names the cursors of WorkersPage.
const workerList = "workers"

// WorkersPage reads, in one read-only transaction, a page of limit
// (1..page.Max, 0: page.Default) of the project's workers after the page
// that cursor names ("": the first), in name order, with their counts,
// usage and live leases (at most WorkerPageLeases). Every read is bounded
// by the page: the names are a skip scan of the index of leases by worker,
// the counts and usage primary-key reads, the live leases the partial
// index of live leases by worker.
//
// Errors: invalid_argument (limit, cursor).
func (s *Service) WorkersPage(ctx context.Context, project uuid.UUID, cursor string, limit int) (WorkerPage, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return WorkerPage{}, err
	}
	after, _, err := page.DecodeText(workerList, cursor)
	if err != nil {
		return WorkerPage{}, err
	}
	var w WorkerPage
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		q := dbq.New()
		names, err := q.WorkerNamesPage(ctx, tx, dbq.WorkerNamesPageParams{ProjectID: project, After: after, MaxRows: int32(limit + 1)})
		if err != nil {
			return err
		}
		if len(names) > limit {
			names = names[:limit]
			w.Next = page.EncodeText(workerList, names[limit-1])
		}
		if len(names) == 0 {
			w.Usage = map[string]Usage{}
			return nil
		}
		outcomes, err := q.WorkerOutcomesOf(ctx, tx, dbq.WorkerOutcomesOfParams{ProjectID: project, Workers: names})
		if err != nil {
			return err
		}
		byName := make(map[string]*WorkerStat, len(names))
		w.Stats = make([]WorkerStat, len(names))
		for i, n := range names {
			w.Stats[i] = WorkerStat{Worker: n, Outcomes: map[Outcome]int{}}
			byName[n] = &w.Stats[i]
		}
		for _, r := range outcomes {
			st := byName[r.Worker]
			if st == nil {
				continue
			}
			if r.Outcome == "" {
				st.Active += int(r.Leases)
			} else {
				st.Outcomes[Outcome(r.Outcome)] += int(r.Leases)
			}
			if r.LastSeen.After(st.LastSeen) {
				st.LastSeen = r.LastSeen
			}
		}
		usage, err := q.WorkerUsageOf(ctx, tx, dbq.WorkerUsageOfParams{ProjectID: project, Workers: names})
		if err != nil {
			return err
		}
		w.Usage = make(map[string]Usage, len(usage))
		for _, r := range usage {
			w.Usage[r.Worker] = usageOf(r.TokensIn, r.TokensOut, r.CostMicroUsd, r.ToolCalls)
		}
		live, err := q.LiveLeasesOfWorkers(ctx, tx, dbq.LiveLeasesOfWorkersParams{
			Now: s.clock.Now(), ProjectID: project, Workers: names, MaxRows: WorkerPageLeases,
		})
		if err != nil {
			return err
		}
		w.Active = make([]Lease, len(live))
		w.Activity = make([]Activity, len(live))
		for i, r := range live {
			l := fromRow(r.Lease, r.Refusals)
			w.Active[i] = l
			w.Activity[i] = Activity{
				LeaseID: l.ID, ItemID: l.ItemID, Worker: l.Worker, Epoch: l.Epoch, AcquiredAt: l.AcquiredAt,
				HeartbeatAt: l.HeartbeatAt, ExpiresAt: l.ExpiresAt, Progress: l.Progress,
				LastActivity: r.LastActivity, Liveness: livenessOfRank[r.Rank], Usage: l.Usage,
			}
		}
		return nil
	})
	if err != nil {
		return WorkerPage{}, db.Translate(err)
	}
	return w, nil
}
