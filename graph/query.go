package graph

import (
	"context"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Page sizes of ListItems.
const (
	DefaultPageSize = page.Default
	MaxPageSize     = page.Max
)

// ListItems lists a project's items, filtered by derived state (any of
// States), label, parent and text (a case-insensitive substring of the
// title or of the body; trigram indexes keep it fast), one page at a time,
// in f.Order (creation order by default).
//
// Errors: invalid_argument for a negative or too large Limit (> 500), an
// unknown state or order, a cursor that ListItems did not make for the same
// order, a Text longer than a title (MaxTitleChars) or a Label longer than
// a label (MaxLabelChars): no longer value can match, and a long pattern
// makes the scan slow.
func (s *Service) ListItems(ctx context.Context, project uuid.UUID, f ListFilter) (ItemPage, error) {
	limit, err := page.Limit(f.Limit)
	if err != nil {
		return ItemPage{}, err
	}
	if n := utf8.RuneCountInString(f.Text); n > MaxTitleChars {
		return ItemPage{}, wgerr.InvalidField("q", "is %d characters long; at most %d are allowed", n, MaxTitleChars)
	}
	if n := utf8.RuneCountInString(f.Label); n > MaxLabelChars {
		return ItemPage{}, wgerr.InvalidField("label", "is %d characters long; at most %d are allowed", n, MaxLabelChars)
	}
	states := make([]string, 0, len(f.States))
	for _, st := range f.States {
		if !validState(st) {
			return ItemPage{}, wgerr.InvalidField("state", "unknown state %q", st)
		}
		states = append(states, string(st))
	}
	args := dbq.ListItemsParams{
		Now: s.clock.Now(), ProjectID: project, ParentID: f.ParentID, States: states,
	}
	if f.Label != "" {
		args.Label = &f.Label
	}
	if f.Text != "" {
		like := "%" + escapeLike(f.Text) + "%"
		args.TextLike = &like
	}
	args.Status = statusOfStates(f.States)
	read, err := itemReader(f.Order, f.Cursor, args)
	if err != nil {
		return ItemPage{}, err
	}
	var out ItemPage
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		if args.TextLike != nil {
			if err := dbq.New().PlanEachSearch(ctx, tx); err != nil {
				return err
			}
		}
		var ex dbq.DBTX = tx
		if args.Status != nil {
			// A status filter reads items_by_status (migration 00072)
			// when its status is one the index holds, which only a plan
			// made for the status knows.
			ex = db.CustomPlan(tx)
		}
		// The rows in chunks, until the page or its byte budget is full
		// (page.Read), each chunk after the last row of the one before,
		// all in the transaction's one snapshot.
		rows, err := page.Read(limit, func(last *listedItem, n int) ([]listedItem, error) {
			return read(ctx, ex, last, n)
		}, func(r listedItem) int { return r.item.Size() })
		if err != nil {
			return err
		}
		if len(rows) > limit {
			rows, out.NextCursor = rows[:limit], rows[limit-1].cursor
		}
		out.Items = make([]Item, len(rows))
		for i, r := range rows {
			out.Items[i] = r.item
		}
		fit := func() {
			if n := page.Fit(len(out.Items), func(i int) int { return out.Items[i].Size() }); n < len(out.Items) {
				out.Items, out.NextCursor = out.Items[:n], rows[n-1].cursor
			}
		}
		// The rows alone first, so that only the items that may be on
		// the page are explained; then again with what keeps them from
		// being claimed (up to MaxBlockedByRefs titles of prerequisites
		// and of children, the questions they wait on), which is in the
		// answer too and can only shorten the page.
		fit()
		if err := fillBlockedBy(ctx, tx, args.Now, project, out.Items); err != nil {
			return err
		}
		fit()
		return nil
	})
	return out, err
}

// ItemOrder is an order of ListItems: a key, descending with a leading "-".
type ItemOrder string

// The orders of ListItems. The zero value is OrderCreated.
const (
	OrderCreated   ItemOrder = "created"  // oldest first
	OrderNewest    ItemOrder = "-created" // newest first
	OrderPriority  ItemOrder = "priority" // lowest priority first
	OrderPriorityD ItemOrder = "-priority"
	OrderUpdated   ItemOrder = "updated" // least recently changed first
	OrderUpdatedD  ItemOrder = "-updated"
)

// ItemOrders are the orders ListItems knows.
var ItemOrders = []ItemOrder{OrderCreated, OrderNewest, OrderPriority, OrderPriorityD, OrderUpdated, OrderUpdatedD}

// listedItem is a row of any of ListItems' queries, as an Item, with the
// cursor that continues after it and, in a sorted order, its sort value
// (ListItemsSorted's sort_value), which the next chunk continues after.
type listedItem struct {
	item      Item
	sortValue int64
	cursor    string
}

// itemReader returns the read of a chunk of a page in order: the at most n
// rows after last, or after cursor when last is nil; the creation-order
// index forwards or backwards, or a keyset on another column.
func itemReader(order ItemOrder, cursor string, a dbq.ListItemsParams) (func(ctx context.Context, tx dbq.DBTX, last *listedItem, n int) ([]listedItem, error), error) {
	list := "items"
	if order != "" && order != OrderCreated {
		list += ":" + string(order)
	}
	switch order {
	case "", OrderCreated:
		after, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx dbq.DBTX, last *listedItem, n int) ([]listedItem, error) {
			a := a
			a.AfterSeq, a.MaxRows = after, int32(n)
			if last != nil {
				a.AfterSeq = last.item.Seq
			}
			rows, err := dbq.New().ListItems(ctx, tx, a)
			return convertRows(rows, err, func(r dbq.ListItemsRow) listedItem {
				return listedItem{itemFromRow(r.Item, r.State, r.DbNow), 0, page.Encode(list, r.Item.Seq)}
			})
		}, nil
	case OrderNewest:
		before, err := page.Decode(list, cursor)
		if err != nil {
			return nil, err
		}
		if before == 0 {
			before = math.MaxInt64
		}
		p := dbq.ListItemsNewestParams{Now: a.Now, ProjectID: a.ProjectID, BeforeSeq: before, ParentID: a.ParentID,
			Label: a.Label, TextLike: a.TextLike, States: a.States, Status: a.Status}
		return func(ctx context.Context, tx dbq.DBTX, last *listedItem, n int) ([]listedItem, error) {
			p := p
			p.MaxRows = int32(n)
			if last != nil {
				p.BeforeSeq = last.item.Seq
			}
			rows, err := dbq.New().ListItemsNewest(ctx, tx, p)
			return convertRows(rows, err, func(r dbq.ListItemsNewestRow) listedItem {
				return listedItem{itemFromRow(r.Item, r.State, r.DbNow), 0, page.Encode(list, r.Item.Seq)}
			})
		}, nil
	case OrderPriority, OrderPriorityD, OrderUpdated, OrderUpdatedD:
		key, seq, started, err := page.DecodeKey(list, cursor)
		if err != nil {
			return nil, err
		}
		if !started {
			key, seq = math.MinInt64, math.MinInt64
		}
		p := dbq.ListItemsSortedParams{Now: a.Now, SortKey: strings.TrimPrefix(string(order), "-"), Dir: 1,
			ProjectID: a.ProjectID, AfterValue: key, AfterSeq: seq, ParentID: a.ParentID,
			Label: a.Label, TextLike: a.TextLike, States: a.States, Status: a.Status}
		if strings.HasPrefix(string(order), "-") {
			p.Dir = -1
		}
		encode := func(r listedSorted) listedItem {
			return listedItem{itemFromRow(r.item, r.state, r.dbNow), r.sortValue, page.EncodeKey(list, r.sortValue, r.item.Seq*p.Dir)}
		}
		return func(ctx context.Context, tx dbq.DBTX, last *listedItem, n int) ([]listedItem, error) {
			p, started := p, started
			p.MaxRows = int32(n)
			if last != nil {
				// The keyset the last row's cursor names.
				p.AfterValue, p.AfterSeq, started = last.sortValue, last.item.Seq*p.Dir, true
			}
			// The open items, sorted (items_by_status), and a chunk of
			// the finished ones, in order from their indexes, merged.
			var open, done []listedSorted
			if p.Status == nil || *p.Status == string(StatusOpen) {
				po, status := p, string(StatusOpen)
				po.Status = &status
				rows, err := dbq.New().ListItemsSorted(ctx, db.CustomPlan(tx), po)
				if err != nil {
					return nil, err
				}
				for _, r := range rows {
					open = append(open, listedSorted{r.Item, r.State, r.DbNow, r.SortValue})
				}
			}
			if p.Status == nil || *p.Status != string(StatusOpen) {
				var err error
				if done, err = finishedReader(order, started, p)(ctx, tx); err != nil {
					return nil, err
				}
			}
			merged := mergeSorted(open, done, p.Dir, n)
			out := make([]listedItem, len(merged))
			for i, r := range merged {
				out[i] = encode(r)
			}
			return out, nil
		}, nil
	}
	return nil, wgerr.InvalidField("sort", "unknown order %q (created, priority or updated; a leading - for descending)", order)
}

// listedSorted is a row of a sorted list with its sort value (the key
// times the order's direction, ListItemsSorted's sort_value).
type listedSorted struct {
	item      dbq.Item
	state     string
	dbNow     time.Time
	sortValue int64
}

// finishedReader returns the read of the finished items of a sorted list
// after p's cursor (started: the cursor names a row), in order from the
// partial indexes of finished items (ListFinishedItemsBy*, migration
// 00073). The cursor is the last row's (sort value, seq times the
// direction); the statements take the key and seq themselves.
func finishedReader(order ItemOrder, started bool, p dbq.ListItemsSortedParams) func(context.Context, dbq.DBTX) ([]listedSorted, error) {
	afterValue, afterSeq := p.AfterValue*p.Dir, p.AfterSeq*p.Dir
	if !started {
		afterValue, afterSeq = math.MinInt64, math.MinInt64
		if p.Dir < 0 {
			afterValue, afterSeq = math.MaxInt64, math.MaxInt64
		}
	}
	var afterAt *time.Time
	if started {
		at := time.UnixMicro(afterValue).UTC()
		afterAt = &at
	}
	byPriority := dbq.ListFinishedItemsByPriorityParams{Now: p.Now, TextLike: p.TextLike, ProjectID: p.ProjectID,
		AfterValue: afterValue, AfterSeq: afterSeq, Status: p.Status, ParentID: p.ParentID, Label: p.Label,
		States: p.States, MaxRows: p.MaxRows}
	byUpdated := dbq.ListFinishedItemsByUpdatedParams{Now: p.Now, TextLike: p.TextLike, ProjectID: p.ProjectID,
		AfterAt: afterAt, AfterSeq: afterSeq, Status: p.Status, ParentID: p.ParentID, Label: p.Label,
		States: p.States, MaxRows: p.MaxRows}
	q := dbq.New()
	return func(ctx context.Context, tx dbq.DBTX) ([]listedSorted, error) {
		var out []listedSorted
		add := func(item dbq.Item, state string, dbNow time.Time, sortValue int64) {
			out = append(out, listedSorted{item, state, dbNow, sortValue})
		}
		switch order {
		case OrderPriority:
			rows, err := q.ListFinishedItemsByPriority(ctx, tx, byPriority)
			for _, r := range rows {
				add(r.Item, r.State, r.DbNow, r.SortValue)
			}
			return out, err
		case OrderPriorityD:
			rows, err := q.ListFinishedItemsByPriorityDesc(ctx, tx, dbq.ListFinishedItemsByPriorityDescParams(byPriority))
			for _, r := range rows {
				add(r.Item, r.State, r.DbNow, r.SortValue)
			}
			return out, err
		case OrderUpdated:
			rows, err := q.ListFinishedItemsByUpdated(ctx, tx, byUpdated)
			for _, r := range rows {
				add(r.Item, r.State, r.DbNow, r.SortValue)
			}
			return out, err
		default: // OrderUpdatedD
			rows, err := q.ListFinishedItemsByUpdatedDesc(ctx, tx, dbq.ListFinishedItemsByUpdatedDescParams(byUpdated))
			for _, r := range rows {
				add(r.Item, r.State, r.DbNow, r.SortValue)
			}
			return out, err
		}
	}
}

// mergeSorted merges two lists in a sorted list's order (sort value, then
// seq times dir, ascending) and keeps the first n rows.
func mergeSorted(a, b []listedSorted, dir int64, n int) []listedSorted {
	less := func(x, y listedSorted) bool {
		if x.sortValue != y.sortValue {
			return x.sortValue < y.sortValue
		}
		return x.item.Seq*dir < y.item.Seq*dir
	}
	out := make([]listedSorted, 0, min(n, len(a)+len(b)))
	for len(out) < n && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && less(a[0], b[0])) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

func convertRows[R any](rows []R, err error, conv func(R) listedItem) ([]listedItem, error) {
	if err != nil {
		return nil, err
	}
	out := make([]listedItem, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out, nil
}

// statusOfStates is the status every one of states has, when they share
// one (ready, leased, blocked and attention are open items), else nil: the
// lists' status predicate, which reads the items of that status only
// (items_by_status, migration 00072) instead of the project's history.
func statusOfStates(states []State) *string {
	var status string
	for _, st := range states {
		s := string(StatusOpen)
		if st == StateDone || st == StateCancelled {
			s = string(st)
		}
		if status != "" && s != status {
			return nil
		}
		status = s
	}
	if status == "" {
		return nil
	}
	return &status
}

func validState(st State) bool {
	switch st {
	case StateReady, StateLeased, StateBlocked, StateAttention, StateDone, StateCancelled:
		return true
	}
	return false
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Neighbourhood returns an item with its dependencies (finished ones too,
// with their state), dependents, children and ancestors (root first).
// Errors: not_found when the item is not in the project.
func (s *Service) Neighbourhood(ctx context.Context, project, id uuid.UUID) (Neighbourhood, error) {
	now := s.clock.Now()
	q := dbq.New()
	var n Neighbourhood
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		if n.Item, err = getItem(ctx, tx, now, project, id); err != nil {
			return err
		}
		deps, err := q.PrerequisiteRefs(ctx, tx, dbq.PrerequisiteRefsParams{Now: now, ProjectID: project, Ids: []uuid.UUID{id}})
		if err != nil {
			return err
		}
		n.Dependencies = make([]ItemRef, len(deps))
		for i, d := range deps {
			n.Dependencies[i] = ItemRef{ID: d.ID, Title: d.Title, State: State(d.State)}
		}
		dependents, err := q.DependentRefs(ctx, tx, dbq.DependentRefsParams{Now: now, ProjectID: project, ID: id})
		if err != nil {
			return err
		}
		n.Dependents = make([]ItemRef, len(dependents))
		for i, d := range dependents {
			n.Dependents[i] = ItemRef{ID: d.ID, Title: d.Title, State: State(d.State)}
		}
		kids, err := q.ChildRefs(ctx, tx, dbq.ChildRefsParams{Now: now, ProjectID: project, Ids: []uuid.UUID{id}})
		if err != nil {
			return err
		}
		n.Children = make([]ItemRef, len(kids))
		for i, c := range kids {
			n.Children[i] = ItemRef{ID: c.ID, Title: c.Title, State: State(c.State)}
		}
		up, err := q.AncestorRefs(ctx, tx, dbq.AncestorRefsParams{Now: now, ProjectID: project, ID: id})
		if err != nil {
			return err
		}
		n.Ancestors = make([]ItemRef, len(up))
		for i, a := range up {
			n.Ancestors[len(up)-1-i] = ItemRef{ID: a.ID, Title: a.Title, State: State(a.State)}
		}
		return nil
	})
	return n, err
}

// Titles returns the titles of the project's items among ids, by id; ids
// of no item of the project are absent.
func (s *Service) Titles(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := dbq.New().ItemTitles(ctx, s.exec, dbq.ItemTitlesParams{ProjectID: project, Ids: ids})
	if err != nil {
		return nil, db.Translate(err)
	}
	for _, r := range rows {
		out[r.ID] = r.Title
	}
	return out, nil
}
