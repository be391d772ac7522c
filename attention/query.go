package attention

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Get returns one request of the project.
//
// Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Request, error) {
	r, err := getRequest(ctx, s.exec, project, id)
	return r, db.Translate(err)
}

func getRequest(ctx context.Context, q dbq.DBTX, project, id uuid.UUID) (Request, error) {
	row, err := dbq.New().GetAttention(ctx, q, dbq.GetAttentionParams{ProjectID: project, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return Request{}, notFound(id)
	}
	if err != nil {
		return Request{}, err
	}
	return fromRow(row.AttentionRequest, row.ItemTitle), nil
}

// ProjectOf returns the project of a request, for routes that name only the
// request.
//
// Errors: not_found.
func (s *Service) ProjectOf(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	p, err := dbq.New().AttentionProject(ctx, s.exec, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, notFound(id)
	}
	return p, db.Translate(err)
}

// List returns a page of the project's requests, oldest first.
//
// Errors: invalid_argument (state, limit, cursor).
func (s *Service) List(ctx context.Context, project uuid.UUID, f Filter) (Page, error) {
	limit, err := page.Limit(f.Limit)
	if err != nil {
		return Page{}, err
	}
	after, err := page.Decode("attention", f.Cursor)
	if err != nil {
		return Page{}, err
	}
	var state *string
	if f.State != nil {
		switch *f.State {
		case StateOpen, StateResolved, StateDismissed:
		default:
			return Page{}, wgerr.InvalidField("state", "must be open, resolved or dismissed")
		}
		st := string(*f.State)
		state = &st
	}
	rows, err := s.readChunks(ctx, limit, after, func(ctx context.Context, tx dbq.DBTX, after int64, n int32) ([]Request, error) {
		rows, err := dbq.New().ListAttention(ctx, tx, dbq.ListAttentionParams{
			ProjectID: project, AfterSeq: after, State: state, ItemID: f.ItemID, MaxRows: n,
		})
		out := make([]Request, len(rows))
		for i, r := range rows {
			out[i] = fromRow(r.AttentionRequest, r.ItemTitle)
		}
		return out, err
	})
	if err != nil {
		return Page{}, err
	}
	return cutPage("attention", rows, limit), nil
}

// oneRead is the most requests readChunks reads in one statement.
const oneRead = 32

// readChunks reads the requests of a page of at most limit in chunks
// (page.Read: limit+1 rows, fewer once the byte budget is spent), each
// chunk the at most n requests read(after) returns after (or, in a
// descending list, before) from, the first from the page's start, the
// next from the last request read; all in one snapshot (a repeatable-read
// transaction of their own, or the executor's when it is one).
//
// A page of at most oneRead requests is one statement on the executor, with
// no transaction around it: the claim's history (lease.ClaimHistory, 20) is
// read on the claim's path, where a transaction and a second chunk would
// be three more round trips for what one statement reads, and a request is
// at most about 1 MiB (its context is bounded by the request body), so
// such a page holds at most about oneRead MiB.
func (s *Service) readChunks(ctx context.Context, limit int, from int64, read func(ctx context.Context, tx dbq.DBTX, from int64, n int32) ([]Request, error)) ([]Request, error) {
	if limit+1 <= oneRead {
		rows, err := read(ctx, s.exec, from, int32(limit+1))
		return rows, db.Translate(err)
	}
	var rows []Request
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		rows, err = page.Read(limit, func(last *Request, n int) ([]Request, error) {
			if last != nil {
				from = last.Seq
			}
			return read(ctx, tx, from, int32(n))
		}, Request.Size)
		return err
	})
	return rows, db.Translate(err)
}

// cutPage is the page of an ascending list named list of at most limit
// requests, from rows that readChunks read: limit+1 rows, or fewer when
// the list ended or the budget was spent.
func cutPage(list string, rows []Request, limit int) Page {
	rows, next := page.Cut(list, rows, limit, func(r Request) int64 { return r.Seq })
	out := Page{Requests: rows, NextCursor: next}
	if n := page.Fit(len(out.Requests), func(i int) int { return out.Requests[i].Size() }); n < len(out.Requests) {
		out.Requests, out.NextCursor = out.Requests[:n], page.Encode(list, out.Requests[n-1].Seq)
	}
	return out
}

// InboxKey is a place in the inbox's order (Inbox): the overdue open
// requests first, then the others, each oldest first. Seq is a request's
// sequence number, unique across projects, so one key orders the
// requests of several projects.
type InboxKey struct {
	Overdue bool
	Seq     int64
}

// Before reports whether k comes before o in the inbox's order.
func (k InboxKey) Before(o InboxKey) bool {
	if k.Overdue != o.Overdue {
		return k.Overdue
	}
	return k.Seq < o.Seq
}

// inboxList names the inbox's cursors (package page).
const inboxList = "inbox"

// Cursor is the opaque cursor of the inbox's page after k.
func (k InboxKey) Cursor() string {
	rank := int64(1)
	if k.Overdue {
		rank = 0
	}
	return page.EncodeKey(inboxList, rank, k.Seq)
}

// InboxAfter is the key a Cursor names; the empty cursor is nil (from
// the start).
//
// Errors: invalid_argument (field "cursor") for anything else.
func InboxAfter(cursor string) (*InboxKey, error) {
	rank, seq, ok, err := page.DecodeKey(inboxList, cursor)
	if err != nil || !ok {
		return nil, err
	}
	if rank != 0 && rank != 1 {
		return nil, wgerr.InvalidField("cursor", "is not a cursor this list returned")
	}
	return &InboxKey{Overdue: rank == 0, Seq: seq}, nil
}

// Key is r's place in the inbox's order.
func (r Request) Key() InboxKey { return InboxKey{Overdue: r.Overdue(), Seq: r.Seq} }

// Inbox returns up to limit (1..page.Max; 0: page.Default) of the
// project's open requests in the inbox's order, after the key after (nil:
// from the start): the overdue ones (past their deadline, as the deadline
// sweeper marked them) oldest first, then the others oldest first. The
// requests are read in chunks (page.Read), and no more once those read
// overrun page.MaxBytes (then fewer than limit come back, the last one
// past the budget: a page cut at the budget ends before it). All is read
// in one snapshot, so a request marked overdue meanwhile is neither shown
// twice nor left out.
//
// Errors: invalid_argument (limit).
func (s *Service) Inbox(ctx context.Context, project uuid.UUID, after *InboxKey, limit int) ([]Request, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return nil, err
	}
	var out []Request
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		// page.Read's limit+1 rows are limit here: Inbox's caller asks
		// for the one more it needs.
		out, err = page.Read(limit-1, func(last *Request, n int) ([]Request, error) {
			from := after
			if last != nil {
				k := last.Key()
				from = &k
			}
			return inboxChunk(ctx, tx, project, from, n)
		}, Request.Size)
		return err
	})
	return out, db.Translate(err)
}

// inboxChunk reads up to n of the project's open requests in the inbox's
// order after the key after (nil: from the start).
func inboxChunk(ctx context.Context, tx dbq.DBTX, project uuid.UUID, after *InboxKey, n int) ([]Request, error) {
	var out []Request
	for _, overdue := range []bool{true, false} {
		var from int64
		switch {
		case after == nil:
		case after.Overdue && !overdue:
		case after.Overdue != overdue:
			continue // the overdue part lies before the key
		default:
			from = after.Seq
		}
		q, max := dbq.New(), int32(n-len(out))
		if overdue {
			rows, err := q.ListInboxOverdueAttention(ctx, tx, dbq.ListInboxOverdueAttentionParams{
				ProjectID: project, AfterSeq: from, MaxRows: max,
			})
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				out = append(out, fromRow(r.AttentionRequest, r.ItemTitle))
			}
		} else {
			rows, err := q.ListInboxWaitingAttention(ctx, tx, dbq.ListInboxWaitingAttentionParams{
				ProjectID: project, AfterSeq: from, MaxRows: max,
			})
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				out = append(out, fromRow(r.AttentionRequest, r.ItemTitle))
			}
		}
		if len(out) == n {
			break
		}
	}
	return out, nil
}

// itemList names the cursors of ForItem. It is the project's list
// (List) narrowed to one item, in the same order: a cursor of either
// resumes the other after the same request.
const itemList = "attention"

// ForItem returns a page of an item's requests, oldest first: the first
// limit (1..page.Max, 0: page.Default) of those asked after the page that
// cursor names ("": from the item's first), within page.MaxBytes as List's
// pages; NextCursor is empty on the last page. A page reads its own rows
// only (attention_by_item), however many requests the item has.
//
// Errors: invalid_argument (limit, cursor).
func (s *Service) ForItem(ctx context.Context, project, itemID uuid.UUID, cursor string, limit int) (Page, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return Page{}, err
	}
	after, err := page.Decode(itemList, cursor)
	if err != nil {
		return Page{}, err
	}
	rows, err := s.readChunks(ctx, limit, after, func(ctx context.Context, tx dbq.DBTX, after int64, n int32) ([]Request, error) {
		rows, err := dbq.New().AttentionForItem(ctx, tx, dbq.AttentionForItemParams{
			ProjectID: project, ItemID: itemID, AfterSeq: after, MaxRows: n,
		})
		out := make([]Request, len(rows))
		for i, r := range rows {
			out[i] = fromRow(r.AttentionRequest, r.ItemTitle)
		}
		return out, err
	})
	if err != nil {
		return Page{}, err
	}
	return cutPage(itemList, rows, limit), nil
}

// History is a page of an item's attention history, newest pages first:
// Requests oldest first within the page; Older is the cursor of the page
// of the requests asked before them ("" when there are none).
type History struct {
	Requests []Request
	Older    string
}

// historyList names the cursors of Latest.
const historyList = "attention-history"

// Latest returns the newest requests of an item asked before the page that
// cursor names ("": the item's newest), at most limit (1..page.Max, 0:
// page.Default) and, beyond the newest one, no more than fit in
// page.MaxBytes; oldest first within the page, Older set when older
// requests exist. A page reads its own rows only (attention_by_item read
// backwards), however many requests the item has: the claim hands a
// worker the item's latest questions and answers with it, and the item
// page shows them a page at a time. It runs on the service's executor (the
// claim's own transaction, when On one).
//
// Errors: invalid_argument (limit, cursor).
func (s *Service) Latest(ctx context.Context, project, itemID uuid.UUID, cursor string, limit int) (History, error) {
	limit, err := page.Limit(limit)
	if err != nil {
		return History{}, err
	}
	before, err := page.Decode(historyList, cursor)
	if err != nil {
		return History{}, err
	}
	if before == 0 {
		before = math.MaxInt64
	}
	rows, err := s.readChunks(ctx, limit, before, func(ctx context.Context, tx dbq.DBTX, before int64, n int32) ([]Request, error) {
		rows, err := dbq.New().AttentionForItemBefore(ctx, tx, dbq.AttentionForItemBeforeParams{
			ProjectID: project, ItemID: itemID, BeforeSeq: before, MaxRows: n,
		})
		out := make([]Request, len(rows))
		for i, r := range rows {
			out[i] = fromRow(r.AttentionRequest, r.ItemTitle)
		}
		return out, err
	})
	if err != nil {
		return History{}, err
	}
	return latestPage(rows, limit, false), nil
}

// latestPage is the page of an item's newest requests that Latest answers
// from rows, the item's requests newest first as read (at most limit+1 of
// them, fewer when the read stopped at the byte budget); cut says the read
// left out requests after rows (so older ones exist).
func latestPage(rows []Request, limit int, cut bool) History {
	more := cut || len(rows) > limit
	newest := rows[:min(len(rows), limit)]
	if n := page.Fit(len(newest), func(i int) int { return newest[i].Size() }); n < len(newest) {
		newest, more = newest[:n], true
	}
	slices.Reverse(newest)
	out := History{Requests: newest}
	if more && len(newest) > 0 {
		out.Older = page.Encode(historyList, newest[0].Seq)
	}
	return out
}

// MaxLatestOfItems is the most requests of an item LatestOfItems hands
// back (its limit): what one statement reads of each item.
const MaxLatestOfItems = oneRead - 1

// LatestOfItems is Latest(ctx, project, item, "", limit) of each of the
// items, in one statement (a batch claim's histories): each item's newest
// limit (1..MaxLatestOfItems) requests, fewer when they pass page.MaxBytes,
// oldest first, with Older set when older requests exist, exactly as
// Latest answers the item alone. The statement reads at most limit+1 of
// an item's requests (attention_by_item read backwards) and sends none of
// an item's after those that already pass page.MaxBytes, so an item's
// history costs what Latest's does, however many requests it has. An item
// without requests maps to an empty History; a request of another project
// is never read. It runs on the service's executor.
//
// Errors: invalid_argument (limit).
func (s *Service) LatestOfItems(ctx context.Context, project uuid.UUID, items []uuid.UUID, limit int) (map[uuid.UUID]History, error) {
	if limit < 1 || limit > MaxLatestOfItems {
		return nil, wgerr.InvalidField("limit", "must be between 1 and %d", MaxLatestOfItems)
	}
	out := make(map[uuid.UUID]History, len(items))
	if len(items) == 0 {
		return out, nil
	}
	rows, err := dbq.New().AttentionLatestOfItems(ctx, s.exec, dbq.AttentionLatestOfItemsParams{
		ProjectID: project, ItemIds: items, MaxRows: int32(limit + 1), MaxBytes: page.MaxBytes,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	// The rows come item by item, each item's newest first.
	for start := 0; start < len(rows); {
		item, end := rows[start].AttentionRequest.ItemID, start
		var reqs []Request
		for ; end < len(rows) && rows[end].AttentionRequest.ItemID == item; end++ {
			reqs = append(reqs, fromRow(rows[end].AttentionRequest, rows[end].ItemTitle))
		}
		out[item] = latestPage(reqs, limit, int(rows[start].ReadRows) > len(reqs))
		start = end
	}
	for _, id := range items {
		if _, ok := out[id]; !ok {
			out[id] = History{Requests: []Request{}}
		}
	}
	return out, nil
}

// AnswersPerHeartbeat bounds the answered questions a heartbeat hands
// back: a lease's newest ones (ClosedForLease).
const AnswersPerHeartbeat = 20

// ClosedForLease returns the non-blocking requests asked under a lease
// that a person (or a deadline's default answer) has resolved or
// dismissed: the newest AnswersPerHeartbeat of them, fewer when they pass
// page.MaxBytes, oldest first. That is what a heartbeat hands back to the
// worker; older says the lease has older ones (GET .../attention?item_id=
// pages through all of them). A heartbeat reads these rows only
// (attention_answers_by_lease), however many the lease had answered.
func (s *Service) ClosedForLease(ctx context.Context, project, leaseID uuid.UUID) (answers []Request, older bool, err error) {
	rows, err := dbq.New().ClosedNonBlockingForLease(ctx, s.exec, dbq.ClosedNonBlockingForLeaseParams{
		ProjectID: project, LeaseID: &leaseID, MaxRows: AnswersPerHeartbeat + 1,
	})
	if err != nil {
		return nil, false, db.Translate(err)
	}
	older = len(rows) > AnswersPerHeartbeat
	answers = make([]Request, min(len(rows), AnswersPerHeartbeat))
	for i := range answers {
		answers[i] = fromRow(rows[i].AttentionRequest, rows[i].ItemTitle)
	}
	if n := page.Fit(len(answers), func(i int) int { return answers[i].Size() }); n < len(answers) {
		answers, older = answers[:n], true
	}
	slices.Reverse(answers)
	return answers, older, nil
}

// CountOpen returns how many requests of the project are open (the inbox
// badge).
func (s *Service) CountOpen(ctx context.Context, project uuid.UUID) (int, error) {
	n, err := dbq.New().CountOpenAttention(ctx, s.exec, project)
	return int(n), db.Translate(err)
}
