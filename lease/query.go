package lease

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Get returns one lease of the project.
//
// Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Lease, error) {
	l, err := s.getLease(ctx, s.exec, project, id)
	return l, db.Translate(err)
}

func (s *Service) getLease(ctx context.Context, q dbq.DBTX, project, id uuid.UUID) (Lease, error) {
	row, err := dbq.New().GetLease(ctx, q, dbq.GetLeaseParams{ProjectID: project, LeaseID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, notFound(id)
	}
	if err != nil {
		return Lease{}, err
	}
	return fromRow(row.Lease, row.Refusals), nil
}

func notFound(id uuid.UUID) error {
	return wgerr.New(wgerr.CodeNotFound, "lease %s not found", id)
}

// Holder returns the project of a lease and the token it was granted to
// (nil for a lease granted without one). Both never change, so callers may
// authorise a mutation on them before the fenced statement runs.
//
// Errors: not_found.
func (s *Service) Holder(ctx context.Context, leaseID uuid.UUID) (project uuid.UUID, token *uuid.UUID, err error) {
	row, err := dbq.New().LeaseHolder(ctx, s.exec, leaseID)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil, notFound(leaseID)
	}
	if err != nil {
		return uuid.Nil, nil, db.Translate(err)
	}
	return row.ProjectID, row.TokenID, nil
}

// RequestStop records that a person asked the lease's worker to stop,
// with their reason (note, optional: the lease's StopNote); the worker
// learns it on its next heartbeat. The lease is not ended (no
// pre-emption): the worker is expected to release, fail or finish. Asking
// twice keeps the first request and its reason.
//
// Errors: invalid_argument (by; reason, the note, longer than 64 KiB);
// not_found; conflict (the lease has ended).
func (s *Service) RequestStop(ctx context.Context, project, leaseID uuid.UUID, by, note string) (Lease, error) {
	by = strings.TrimSpace(by)
	if by == "" || len(by) > maxWorkerBytes {
		return Lease{}, wgerr.InvalidField("by", "must be 1 to %d bytes", maxWorkerBytes)
	}
	var notePtr *string
	if note = strings.TrimSpace(note); note != "" {
		notePtr = &note
	}
	if len(note) > maxMessageBytes {
		return Lease{}, wgerr.InvalidField("reason", "must be at most %d bytes", maxMessageBytes)
	}
	if err := input.Prose("reason", note); err != nil {
		return Lease{}, err
	}
	row, err := dbq.New().RequestStop(ctx, s.exec, dbq.RequestStopParams{
		Now: s.clock.Now(), RequestedBy: &by, Note: notePtr, ProjectID: project, LeaseID: leaseID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		l, err := s.Get(ctx, project, leaseID)
		if err != nil {
			return Lease{}, err
		}
		return Lease{}, wgerr.New(wgerr.CodeConflict, "lease %s has already ended (%s)", l.ID, *l.Outcome)
	}
	if err != nil {
		return Lease{}, db.Translate(err)
	}
	return fromRow(row, 0), nil
}

// History returns a page of the project's leases in f.Order (grant order,
// oldest first, by default).
//
// Errors: invalid_argument (outcome, order, limit, a cursor History did not
// make for the same order).
func (s *Service) History(ctx context.Context, project uuid.UUID, f HistoryFilter) (Page, error) {
	limit, err := page.Limit(f.Limit)
	if err != nil {
		return Page{}, err
	}
	p := dbq.LeaseHistoryParams{
		ProjectID: project, ItemID: f.ItemID, Since: f.Since, Until: f.Until,
	}
	if f.Worker != "" {
		p.Worker = &f.Worker
	}
	if f.Outcome != nil {
		if !f.Outcome.valid() {
			return Page{}, wgerr.InvalidField("outcome", "unknown outcome %q", *f.Outcome)
		}
		o := string(*f.Outcome)
		p.Outcome = &o
	}
	var out Page
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		ex := dbq.DBTX(tx)
		if p.Outcome != nil {
			// An outcome filter reads leases_rare_outcomes (migration
			// 00053) when its outcome is one the index holds, which only
			// a plan made for the outcome knows.
			ex = db.CustomPlan(tx)
		}
		// The rows in chunks, until the page or its byte budget is full
		// (page.Read), each chunk from the cursor of the last row of the
		// one before, all in the transaction's one snapshot.
		rows, err := page.Read(limit, func(last *historyRow, n int) ([]historyRow, error) {
			cursor, p := f.Cursor, p
			if last != nil {
				cursor = last.cursor
			}
			p.MaxRows = int32(n)
			return s.history(ctx, ex, f.Order, cursor, p)
		}, func(r historyRow) int { return fromRow(r.lease, r.refusals).Size() })
		if err != nil {
			return err
		}
		if len(rows) > limit {
			rows, out.NextCursor = rows[:limit], rows[limit-1].cursor
		}
		out.Leases = make([]Lease, len(rows))
		for i, r := range rows {
			out.Leases[i] = fromRow(r.lease, r.refusals)
		}
		if n := page.Fit(len(out.Leases), func(i int) int { return out.Leases[i].Size() }); n < len(out.Leases) {
			out.Leases, out.NextCursor = out.Leases[:n], rows[n-1].cursor
		}
		return nil
	})
	if err != nil {
		return Page{}, db.Translate(err)
	}
	return out, nil
}

// HistoryOrder is an order of History: a key, descending with a leading "-".
type HistoryOrder string

// The orders of History. The zero value is OrderAcquired.
const (
	OrderAcquired HistoryOrder = "acquired"  // oldest grant first
	OrderNewest   HistoryOrder = "-acquired" // newest grant first
	OrderShortest HistoryOrder = "ran"       // shortest run first (a live lease: so far)
	OrderLongest  HistoryOrder = "-ran"
)

// historyRow is a row of any of History's queries, with the cursor that
// continues after it.
type historyRow struct {
	lease    dbq.Lease
	refusals int32
	cursor   string
}

// history reads p.MaxRows rows in order after cursor (a page's, or the
// last row's of the chunk before).
func (s *Service) history(ctx context.Context, ex dbq.DBTX, order HistoryOrder, cursor string, p dbq.LeaseHistoryParams) ([]historyRow, error) {
	list := "leases"
	if order != "" && order != OrderAcquired {
		list += ":" + string(order)
	}
	q := dbq.New()
	var out []historyRow
	if (p.Since != nil || p.Until != nil) && (order == "" || order == OrderAcquired || order == OrderNewest) {
		return s.historyWindow(ctx, ex, order, list, cursor, p)
	}
	if p.ItemID != nil {
		return s.itemHistory(ctx, ex, order, list, cursor, p)
	}
	switch order {
	case "", OrderAcquired:
		after, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		p.AfterSeq = after
		rows, err := q.LeaseHistory(ctx, ex, p)
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			out = append(out, historyRow{r.Lease, r.Refusals, page.Encode(list, r.Lease.Seq)})
		}
	case OrderNewest:
		before, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		if before == 0 {
			before = math.MaxInt64
		}
		rows, err := q.LeaseHistoryNewest(ctx, ex, dbq.LeaseHistoryNewestParams{
			ProjectID: p.ProjectID, BeforeSeq: before, ItemID: p.ItemID, Worker: p.Worker, Outcome: p.Outcome,
			Since: p.Since, Until: p.Until, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			out = append(out, historyRow{r.Lease, r.Refusals, page.Encode(list, r.Lease.Seq)})
		}
	case OrderShortest, OrderLongest:
		key, seq, err := page.After(list, cursor)
		if err != nil {
			return nil, err
		}
		dir := durationDir(order)
		rows, err := q.LeaseHistoryByDuration(ctx, ex, dbq.LeaseHistoryByDurationParams{
			Now: s.clock.Now(), Dir: dir, ProjectID: p.ProjectID, AfterValue: key, AfterSeq: seq,
			ItemID: p.ItemID, Worker: p.Worker, Outcome: p.Outcome, Since: p.Since, Until: p.Until, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			out = append(out, historyRow{r.Lease, r.Refusals, page.EncodeKey(list, r.SortValue, r.Lease.Seq*dir)})
		}
	default:
		return nil, wgerr.InvalidField("sort", "unknown order %q (acquired or ran; a leading - for descending)", order)
	}
	return out, nil
}

// itemHistory is history for the leases of one item (p.ItemID), with the
// same orders and cursors, through the item's own queries: they read the
// item's leases from its index (project_id, item_id, epoch), where the
// project's queries, given the item as a parameter that may be NULL, were
// planned (generically) as a walk of the project's history.
func (s *Service) itemHistory(ctx context.Context, ex dbq.DBTX, order HistoryOrder, list, cursor string, p dbq.LeaseHistoryParams) ([]historyRow, error) {
	q := dbq.New()
	var out []historyRow
	add := func(l dbq.Lease, refusals int32) {
		out = append(out, historyRow{l, refusals, page.Encode(list, l.Seq)})
	}
	switch order {
	case "", OrderAcquired:
		after, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		rows, err := q.ItemLeaseHistory(ctx, ex, dbq.ItemLeaseHistoryParams{
			ProjectID: p.ProjectID, ItemID: *p.ItemID, AfterSeq: after, Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			add(r.Lease, r.Refusals)
		}
	case OrderNewest:
		before, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		if before == 0 {
			before = math.MaxInt64
		}
		rows, err := q.ItemLeaseHistoryNewest(ctx, ex, dbq.ItemLeaseHistoryNewestParams{
			ProjectID: p.ProjectID, ItemID: *p.ItemID, BeforeSeq: before, Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			add(r.Lease, r.Refusals)
		}
	case OrderShortest, OrderLongest:
		key, seq, err := page.After(list, cursor)
		if err != nil {
			return nil, err
		}
		dir := durationDir(order)
		rows, err := q.ItemLeaseHistoryByDuration(ctx, ex, dbq.ItemLeaseHistoryByDurationParams{
			Now: s.clock.Now(), Dir: dir, ProjectID: p.ProjectID, ItemID: *p.ItemID, AfterValue: key, AfterSeq: seq,
			Worker: p.Worker, Outcome: p.Outcome, Since: p.Since, Until: p.Until, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			out = append(out, historyRow{r.Lease, r.Refusals, page.EncodeKey(list, r.SortValue, r.Lease.Seq*dir)})
		}
	default:
		return nil, wgerr.InvalidField("sort", "unknown order %q (acquired or ran; a leading - for descending)", order)
	}
	return out, nil
}

// The first page's cursor bounds of historyWindow, before and after every
// acquisition time PostgreSQL and Go both hold.
var (
	windowStart = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	windowEnd   = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// historyWindow reads one page of the leases acquired in the time window
// p.Since, p.Until, in acquisition order (oldest or newest first; leases
// acquired at the same instant in grant order): the window is read from
// its index in order (LeaseHistoryAcquired), where the walk in grant order
// of history's other queries would skip every lease outside it. The
// cursor is the last row's acquisition time (microseconds, as PostgreSQL
// keeps it) and sequence number, of a list of its own ("@window"): a
// cursor of a page without a window is refused.
func (s *Service) historyWindow(ctx context.Context, ex dbq.DBTX, order HistoryOrder, list, cursor string, p dbq.LeaseHistoryParams) ([]historyRow, error) {
	list += "@window"
	key, seq, ok, err := page.DecodeKey(list, cursor)
	if err != nil {
		return nil, err
	}
	q := dbq.New()
	var out []historyRow
	add := func(l dbq.Lease, refusals int32) {
		out = append(out, historyRow{l, refusals, page.EncodeKey(list, l.AcquiredAt.UnixMicro(), l.Seq)})
	}
	if order == OrderNewest {
		before, beforeSeq := windowEnd, int64(math.MaxInt64)
		if ok {
			before, beforeSeq = time.UnixMicro(key).UTC(), seq
		}
		if p.ItemID != nil {
			// The item's leases from its own index (itemHistory).
			rows, err := q.ItemLeaseHistoryAcquiredNewest(ctx, ex, dbq.ItemLeaseHistoryAcquiredNewestParams{
				ProjectID: p.ProjectID, ItemID: *p.ItemID, Since: p.Since, BeforeAt: before, Until: p.Until, BeforeSeq: beforeSeq,
				Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
			})
			if err != nil {
				return nil, db.Translate(err)
			}
			for _, r := range rows {
				add(r.Lease, r.Refusals)
			}
			return out, nil
		}
		rows, err := q.LeaseHistoryAcquiredNewest(ctx, ex, dbq.LeaseHistoryAcquiredNewestParams{
			ProjectID: p.ProjectID, Since: p.Since, BeforeAt: before, Until: p.Until, BeforeSeq: beforeSeq,
			ItemID: p.ItemID, Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			add(r.Lease, r.Refusals)
		}
		return out, nil
	}
	after, afterSeq := windowStart, int64(0)
	if ok {
		after, afterSeq = time.UnixMicro(key).UTC(), seq
	}
	if p.ItemID != nil {
		rows, err := q.ItemLeaseHistoryAcquired(ctx, ex, dbq.ItemLeaseHistoryAcquiredParams{
			ProjectID: p.ProjectID, ItemID: *p.ItemID, AfterAt: after, Since: p.Since, Until: p.Until, AfterSeq: afterSeq,
			Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
		})
		if err != nil {
			return nil, db.Translate(err)
		}
		for _, r := range rows {
			add(r.Lease, r.Refusals)
		}
		return out, nil
	}
	rows, err := q.LeaseHistoryAcquired(ctx, ex, dbq.LeaseHistoryAcquiredParams{
		ProjectID: p.ProjectID, AfterAt: after, Since: p.Since, Until: p.Until, AfterSeq: afterSeq,
		ItemID: p.ItemID, Worker: p.Worker, Outcome: p.Outcome, MaxRows: p.MaxRows,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	for _, r := range rows {
		add(r.Lease, r.Refusals)
	}
	return out, nil
}

// ObservationPage is a page of a lease's refused reports, oldest first;
// Next is the cursor of the page after it ("": the last).
type ObservationPage struct {
	Observations []Observation
	Next         string
}

// Size is the observation's size in a page (page.MaxBytes): its payload
// and texts as an answer carries them.
func (o Observation) Size() int {
	return page.RowOverhead + page.TextSize(o.Kind) + page.TextSize(o.Operation) + page.JSONSize(o.Payload)
}

// observationsList names the cursors of a lease's observations.
const observationsList = "observations"

// Observations returns a page of the refused reports kept for a lease,
// in the order they were received, after cursor ("" from the first): at
// most limit (page.Limit: 0 is page.Default), fewer once their payloads
// pass page.MaxBytes, read in chunks (page.Read) in one snapshot. The
// reports are the first maxObservations of each kind and the last five of
// each kind after those.
//
// Errors: not_found (no such lease), invalid_argument (limit, cursor).
func (s *Service) Observations(ctx context.Context, project, leaseID uuid.UUID, cursor string, limit int) (ObservationPage, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return ObservationPage{}, err
	}
	afterAt, afterTB := time.Time{}, int64(math.MinInt64)
	key, tb, ok, err := page.DecodeKey(observationsList, cursor)
	if err != nil {
		return ObservationPage{}, err
	}
	if ok {
		afterAt, afterTB = time.UnixMicro(key).UTC(), tb
	}
	type row struct {
		Observation
		tb int64
	}
	var rows []row
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		if _, err := s.getLease(ctx, tx, project, leaseID); err != nil {
			return err
		}
		q := dbq.New()
		rows, err = page.Read(limit, func(last *row, n int) ([]row, error) {
			at, tb := afterAt, afterTB
			if last != nil {
				at, tb = last.ReceivedAt, last.tb
			}
			got, err := q.ListObservations(ctx, tx, dbq.ListObservationsParams{
				ProjectID: project, LeaseID: leaseID, Kept: maxObservations, AfterAt: at, AfterTb: tb, MaxRows: int32(n),
			})
			if err != nil {
				return nil, db.Translate(err)
			}
			out := make([]row, len(got))
			for i, r := range got {
				out[i] = row{Observation: Observation{
					ID: r.ID, LeaseID: leaseID, Epoch: r.Epoch, Kind: r.Kind, Operation: r.Operation,
					ReceivedAt: r.ReceivedAt.UTC(), WorkerTime: r.WorkerTime, Payload: r.Payload,
				}, tb: r.Tb}
			}
			return out, nil
		}, func(r row) int { return r.Size() })
		return err
	})
	if err != nil {
		return ObservationPage{}, err
	}
	n := page.Fit(min(len(rows), limit), func(i int) int { return rows[i].Size() })
	var out ObservationPage
	if n < len(rows) {
		last := rows[n-1]
		out.Next = page.EncodeKey(observationsList, last.ReceivedAt.UnixMicro(), last.tb)
	}
	for _, r := range rows[:n] {
		out.Observations = append(out.Observations, r.Observation)
	}
	return out, nil
}

// Active returns the project's leases that have not ended, oldest first
// (including any past expiry that no claim or sweep has ended yet).
func (s *Service) Active(ctx context.Context, project uuid.UUID) ([]Lease, error) {
	rows, err := dbq.New().ActiveLeases(ctx, s.exec, project)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Lease, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r.Lease, r.Refusals)
	}
	return out, nil
}

// WorkerStats summarises the project's leases per worker label: active
// leases, ended leases per outcome, and when the worker was last heard from
// (its latest claim, heartbeat or end).
func (s *Service) WorkerStats(ctx context.Context, project uuid.UUID) ([]WorkerStat, error) {
	rows, err := dbq.New().WorkerOutcomes(ctx, s.exec, project)
	if err != nil {
		return nil, db.Translate(err)
	}
	var out []WorkerStat
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Worker != r.Worker {
			out = append(out, WorkerStat{Worker: r.Worker, Outcomes: map[Outcome]int{}})
		}
		w := &out[len(out)-1]
		if r.Outcome == "" {
			w.Active += int(r.Leases)
		} else {
			w.Outcomes[Outcome(r.Outcome)] += int(r.Leases)
		}
		if r.LastSeen.After(w.LastSeen) {
			w.LastSeen = r.LastSeen
		}
	}
	return out, nil
}

// FleetPage is a page of a project's live leases at one instant: Active
// and Activity describe the same leases (the page), Total counts all the
// live leases, and Next is the cursor of the following page ("" on the
// last). The workers' counts are WorkersPage's.
type FleetPage struct {
	Active   []Lease
	Activity []Activity
	Total    int
	Next     string
}

// liveList names the cursors of FleetPage.
const liveList = "live-leases"

// livenessOfRank is the liveness of a rank of LiveLeasesPage.
var livenessOfRank = [...]Liveness{LivenessStale, LivenessQuiet, LivenessHealthy}

// FleetPage reads, in one read-only transaction, a page of limit
// (1..page.Max, 0: page.Default) of the project's live leases after the
// page that cursor names ("": the first), the ones to look at first first:
// stale, then quiet, then healthy (as Activity judges them, all at one
// instant), each in claim order; with how many live leases there are. A
// page holds its own leases only, however many are live (one token may
// hold a thousand), and, beyond its first lease, no more than fit in
// page.MaxBytes (fleetRowSize: a lease's progress is on the page twice);
// a page cut by the budget ends with the Next of its last lease, as one
// cut by limit. The rows are read in chunks (page.Read). Liveness changes
// with time, so a lease can move to a page already read between two
// reads, as in any keyset list.
//
// Errors: invalid_argument (limit, cursor).
func (s *Service) FleetPage(ctx context.Context, project uuid.UUID, cursor string, limit int) (FleetPage, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return FleetPage{}, err
	}
	rank, seq, err := page.After(liveList, cursor)
	if err != nil {
		return FleetPage{}, err
	}
	switch {
	case cursor == "":
		rank = -1 // before every rank (0..2)
	case rank < 0 || rank >= int64(len(livenessOfRank)):
		return FleetPage{}, wgerr.InvalidField("cursor", "is not a cursor this list returned")
	}
	var f FleetPage
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		q := dbq.New()
		// The rows in chunks until the page or its byte budget is full
		// (page.Read), each chunk after the last row of the one before and
		// judged at the first chunk's instant.
		now := s.clock.Now()
		rows, err := page.Read(limit, func(last *dbq.LiveLeasesPageRow, n int) ([]dbq.LiveLeasesPageRow, error) {
			p := dbq.LiveLeasesPageParams{Now: now, ProjectID: project, AfterRank: int32(rank), AfterSeq: seq, MaxRows: int32(n)}
			if last != nil {
				p.Now, p.AfterRank, p.AfterSeq = &last.DbNow, last.Rank, last.Lease.Seq
			}
			return q.LiveLeasesPage(ctx, tx, p)
		}, func(r dbq.LiveLeasesPageRow) int { return fleetRowSize(fromRow(r.Lease, r.Refusals)) })
		if err != nil {
			return err
		}
		cut := len(rows) > limit
		rows = rows[:min(len(rows), limit)]
		if n := page.Fit(len(rows), func(i int) int { return fleetRowSize(fromRow(rows[i].Lease, rows[i].Refusals)) }); n < len(rows) {
			rows, cut = rows[:n], true
		}
		if cut {
			last := rows[len(rows)-1]
			f.Next = page.EncodeKey(liveList, int64(last.Rank), last.Lease.Seq)
		}
		f.Active = make([]Lease, len(rows))
		f.Activity = make([]Activity, len(rows))
		for i, r := range rows {
			l := fromRow(r.Lease, r.Refusals)
			f.Active[i] = l
			f.Activity[i] = Activity{
				LeaseID: l.ID, ItemID: l.ItemID, Worker: l.Worker, Epoch: l.Epoch, AcquiredAt: l.AcquiredAt,
				HeartbeatAt: l.HeartbeatAt, ExpiresAt: l.ExpiresAt, Progress: l.Progress,
				LastActivity: r.LastActivity, Liveness: livenessOfRank[r.Rank], Usage: l.Usage,
			}
		}
		n, err := q.CountActiveLeases(ctx, tx, project)
		if err != nil {
			return err
		}
		f.Total = int(n)
		return nil
	})
	if err != nil {
		return FleetPage{}, db.Translate(err)
	}
	return f, nil
}

// fleetRowSize is what a live lease takes in a FleetPage: the lease
// (Lease.Size), and its progress again in its Activity.
func fleetRowSize(l Lease) int { return l.Size() + page.JSONSize(l.Progress) }

// CountActive returns how many leases of the project have not ended (the
// workers badge; expired leases not yet swept count).
func (s *Service) CountActive(ctx context.Context, project uuid.UUID) (int, error) {
	n, err := dbq.New().CountActiveLeases(ctx, s.exec, project)
	return int(n), db.Translate(err)
}

// ItemLeasePage is a page of an item's leases, newest pages first: Leases
// oldest first within the page; Older is the cursor of the page of the
// leases granted before them ("" when there are none); Total is how many
// leases the item has had.
type ItemLeasePage struct {
	Leases []Lease
	Older  string
	Total  int
}

// itemLeasesList names the cursors of ItemLeases.
const itemLeasesList = "item-leases"

// ItemLeases returns a page of the item's leases: the newest limit
// (1..page.Max, 0: page.Default) of those granted before the page that
// cursor names ("": the item's newest leases), a keyset on the item's
// epochs, so that a page reads its own rows only, however many leases the
// item has had; Total is the item's epoch (each claim's lease has one of
// its own, 1 to epoch), read without the leases. Older pages follow Older.
// Beyond its newest lease, a page holds no more leases than fit in
// page.MaxBytes (each lease's result, progress and outcome detail
// included: Lease.Size), read in chunks (page.Read); a page cut by the
// budget ends with the Older of its oldest lease, as one cut by limit.
//
// Errors: invalid_argument (limit, cursor).
func (s *Service) ItemLeases(ctx context.Context, project, item uuid.UUID, cursor string, limit int) (ItemLeasePage, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return ItemLeasePage{}, err
	}
	before, err := page.Decode(itemLeasesList, cursor)
	if err != nil {
		return ItemLeasePage{}, err
	}
	if before == 0 {
		before = math.MaxInt64
	}
	var out ItemLeasePage
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		q := dbq.New()
		// Newest first, in chunks until the page or its byte budget is
		// full (page.Read), each chunk before the last epoch read.
		rows, err := page.Read(limit, func(last *dbq.ItemLeasesBeforeRow, n int) ([]dbq.ItemLeasesBeforeRow, error) {
			from := before
			if last != nil {
				from = last.Lease.Epoch
			}
			return q.ItemLeasesBefore(ctx, tx, dbq.ItemLeasesBeforeParams{
				ProjectID: project, ItemID: item, BeforeEpoch: from, MaxRows: int32(n),
			})
		}, func(r dbq.ItemLeasesBeforeRow) int { return fromRow(r.Lease, r.Refusals).Size() })
		if err != nil {
			return err
		}
		cut := len(rows) > limit
		newest := make([]Lease, min(len(rows), limit))
		for i := range newest {
			newest[i] = fromRow(rows[i].Lease, rows[i].Refusals)
		}
		if n := page.Fit(len(newest), func(i int) int { return newest[i].Size() }); n < len(newest) {
			newest, cut = newest[:n], true
		}
		if cut {
			out.Older = page.Encode(itemLeasesList, newest[len(newest)-1].Epoch)
		}
		slices.Reverse(newest)
		out.Leases = newest
		n, err := q.CountItemLeases(ctx, tx, dbq.CountItemLeasesParams{ProjectID: project, ItemID: item})
		out.Total = int(n)
		return err
	})
	if err != nil {
		return ItemLeasePage{}, db.Translate(err)
	}
	return out, nil
}

// durationDir is the keyset direction of a history ordered by how long
// leases ran: 1 for OrderShortest, -1 for OrderLongest (the keys are
// multiplied by it, so both read ascending).
func durationDir(order HistoryOrder) int64 {
	if order == OrderLongest {
		return -1
	}
	return 1
}
