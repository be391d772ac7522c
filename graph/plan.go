package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// MaxPlanItems bounds one ImportPlan.
const MaxPlanItems = 50000

// MaxPlanRequestBytes bounds the JSON of one plan import: the body limit
// of the API's plan route (every other route takes 1 MiB) and the CLI's
// check before it sends a plan. It leaves room for MaxPlanItems items of
// some 300 bytes each, so that the item bound is one a plan can meet.
const MaxPlanRequestBytes = 16 << 20

// ImportPlan creates a whole plan in ONE transaction: every item (children
// below their plan parent), every dependency (by plan key, or by the id of
// an existing item of the project), with readiness counters computed up
// front and a constant number of statements however large the plan. Keys
// are optional but unique; items are created depth first in plan order.
// With dryRun everything is checked (existing ids too) and the result shows
// the ids the items would get, but nothing is stored.
//
// Keys make a re-import idempotent: a key is stored with its item, and an
// item whose key already exists in the project is left alone (its fields,
// parent and dependencies are not changed; Existing says how it differs
// from the plan). New items may depend on it and be created below it. So
// importing the same plan twice creates nothing the second time.
//
// Errors (nothing is stored): invalid_argument naming the line for a bad
// field, a duplicate key, an unknown key or an id that is not an item of the
// project, or an empty or too large plan; *CycleError (dependency_cycle)
// naming the keys and lines of a cycle among the plan's dependencies and
// parent/child edges; depth_limit naming the line of a new item that would
// pass the depth limit of a budget over a stored item it is created below.
func (s *Service) ImportPlan(ctx context.Context, project uuid.UUID, plan []PlanItem, by string, dryRun bool) (ImportResult, error) {
	if err := checkBy(by); err != nil {
		return ImportResult{}, err
	}
	p, err := flattenPlan(plan)
	if err != nil {
		return ImportResult{}, err
	}
	if cyc := keyCycle(p.waits); cyc != nil {
		return ImportResult{}, p.cycleError(cyc)
	}
	now := s.clock.Now()
	var res ImportResult
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		if err := p.matchKeys(ctx, tx, project); err != nil {
			return err
		}
		if err := p.resolveExisting(ctx, tx, project); err != nil {
			return err
		}
		if err := p.checkExistingParents(ctx, tx, project); err != nil {
			return err
		}
		if err := p.checkDepths(ctx, tx, project); err != nil {
			return err
		}
		res = p.result()
		if dryRun {
			return errDryRun
		}
		if err := events.SetActor(ctx, tx, by); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, now, project, by, p.newRows(), p.edges); err != nil {
			return err
		}
		if err := p.addChildrenToExisting(ctx, tx, now, project); err != nil {
			return err
		}
		_, err := events.Append(ctx, tx, events.New{Project: project, Type: events.PlanImported, At: now, Actor: by,
			Payload: map[string]any{"created": len(res.Items), "existing": len(res.Existing)}})
		return err
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if err != nil {
		return ImportResult{}, err
	}
	if !dryRun && len(p.newRows()) >= analyzeAfter {
		// A large import can multiply the size of the tables between two
		// autovacuum passes; with stale statistics the planner walks whole
		// tables for the dependents of a finished item. Refresh them now.
		// Best effort: a failure (e.g. a role that doesn't own the tables)
		// only leaves it to autovacuum (and, in a savepoint, leaves a
		// caller's transaction usable).
		_ = db.Atomic(ctx, s.exec, func(q db.DBTX) error {
			_, err := q.Exec(ctx, "ANALYZE items, dependencies")
			return err
		})
	}
	return res, nil
}

// analyzeAfter is the plan size from which an import refreshes the
// planner's statistics of items and dependencies.
const analyzeAfter = 1000

var errDryRun = &wgerr.Error{Code: wgerr.CodeInternal, Message: "dry run: roll back"}

// flatPlan is a validated plan in creation order.
type flatPlan struct {
	items    []*PlanItem
	rows     []newRow
	waits    [][]int // plan indexes each item waits for (dependencies and children)
	edges    []newEdge
	keys     map[string]int
	existing map[uuid.UUID][]int // existing item -> plan indexes depending on it

	parent []int      // plan index of each item's plan parent, -1: none
	deps   [][]depRef // each item's dependencies, in plan order, without repeats

	// Filled by matchKeys: plan items whose key exists in the project.
	stored       map[int]storedItem
	newUnder     map[uuid.UUID]int32 // stored parent -> new children below it
	storedParent []int               // new items whose parent is stored
}

// depRef is one dependency of a plan item: a plan index, or (pos < 0) the
// id of an item outside the plan.
type depRef struct {
	pos int
	id  uuid.UUID
}

// storedItem is an item of the project that already carries a plan key.
type storedItem struct {
	row     dbq.LockItemsByPlanKeyRow
	differs []string
}

func planErr(it *PlanItem, pos int, format string, args ...any) error {
	where := fmt.Sprintf("item %d", pos+1)
	if it.Line > 0 {
		where = fmt.Sprintf("line %d", it.Line)
	}
	return &wgerr.Error{Code: wgerr.CodeInvalid, Field: "plan",
		Message: where + ": " + fmt.Sprintf(format, args...),
		Details: planErrDetails(it)}
}

// planErrDetails names the plan item of an error: its key, and its line
// when the plan came from a file.
func planErrDetails(it *PlanItem) map[string]any {
	d := map[string]any{"key": it.Key}
	if it.Line > 0 {
		d["line"] = it.Line
	}
	return d
}

func flattenPlan(plan []PlanItem) (*flatPlan, error) {
	p := &flatPlan{keys: map[string]int{}, existing: map[uuid.UUID][]int{}}
	var walk func(items []PlanItem, parent int) error
	walk = func(items []PlanItem, parent int) error {
		for i := range items {
			it := &items[i]
			pos := len(p.items)
			if pos >= MaxPlanItems {
				return wgerr.InvalidField("items", "has more than %d items, children included: the most one import takes (split the plan)", MaxPlanItems)
			}
			p.items = append(p.items, it)
			p.waits = append(p.waits, nil)
			p.parent = append(p.parent, parent)
			p.deps = append(p.deps, nil)
			row := newRow{id: uuid.New(), body: it.Body, priority: it.Priority}
			title, err := cleanTitle("title", it.Title)
			if err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			row.title = title
			if err := checkBody("body", it.Body); err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			if row.labels, row.requires, row.touches, err = cleanMatching("", it.Labels, it.Requires, it.Touches); err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			if row.onExpiry, err = cleanOnExpiry("on_expiry", it.OnExpiry, true); err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			if k := strings.TrimSpace(it.Key); k != "" {
				if err := input.Line("key", k); err != nil {
					return planErr(it, pos, "%s", err.Error())
				}
				if prev, dup := p.keys[k]; dup {
					return planErr(it, pos, "key %q is already used by %s", k, where(p.items[prev], prev))
				}
				p.keys[k] = pos
				row.planKey = k
			}
			if parent >= 0 {
				row.parentID = p.rows[parent].id
				p.waits[parent] = append(p.waits[parent], pos)
				p.rows[parent].children++
			}
			p.rows = append(p.rows, row)
			if err := walk(it.Children, pos); err != nil {
				return err
			}
		}
		return nil
	}
	if len(plan) == 0 {
		return nil, wgerr.InvalidField("plan", "has no items")
	}
	if err := walk(plan, -1); err != nil {
		return nil, err
	}
	// Dependencies, once every key is known.
	for pos, it := range p.items {
		seen := map[string]bool{}
		for _, ref := range it.DependsOn {
			ref = strings.TrimSpace(ref)
			if seen[ref] {
				continue
			}
			seen[ref] = true
			if j, ok := p.keys[ref]; ok {
				// An item naming its own key closes a one-item cycle,
				// which keyCycle reports like any other.
				p.waits[pos] = append(p.waits[pos], j)
				p.deps[pos] = append(p.deps[pos], depRef{pos: j})
				continue
			}
			id, err := uuid.Parse(ref)
			if err != nil {
				return nil, planErr(it, pos, "depends on unknown key %q", ref)
			}
			p.existing[id] = append(p.existing[id], pos)
			p.deps[pos] = append(p.deps[pos], depRef{pos: -1, id: id})
		}
	}
	return p, nil
}

// matchKeys finds the plan's keys that already exist in the project, locks
// those items, and settles what is new: the rows to insert (with their
// counters), the edges, and the stored parents that get new children.
// A new child of a finished stored item is a conflict (409).
func (p *flatPlan) matchKeys(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	p.stored = map[int]storedItem{}
	p.newUnder = map[uuid.UUID]int32{}
	if len(p.keys) > 0 {
		keys := make([]string, 0, len(p.keys))
		for k := range p.keys {
			keys = append(keys, k)
		}
		rows, err := dbq.New().LockItemsByPlanKey(ctx, tx, dbq.LockItemsByPlanKeyParams{ProjectID: project, Keys: keys})
		if err != nil {
			return err
		}
		for _, r := range rows {
			pos := p.keys[r.PlanKey]
			p.stored[pos] = storedItem{row: r}
		}
	}
	for pos, st := range p.stored {
		p.rows[pos].id = st.row.ID
	}
	// After every stored id is known: a stored item may depend on one
	// later in the plan.
	for pos, st := range p.stored {
		st.differs = p.differences(pos, st.row)
		p.stored[pos] = st
	}
	for pos := range p.items {
		p.rows[pos].children, p.rows[pos].unmet = 0, 0
	}
	p.edges = p.edges[:0]
	for pos := range p.items {
		if _, ok := p.stored[pos]; ok {
			continue // left alone: no new parent, no new dependencies
		}
		if par := p.parent[pos]; par >= 0 {
			p.rows[pos].parentID = p.rows[par].id
			if st, ok := p.stored[par]; ok {
				if st.row.Status != string(StatusOpen) {
					return conflictf("%s: its parent %q is %s; children can only be added to an open item", where(p.items[pos], pos), p.items[par].Key, st.row.Status)
				}
				p.newUnder[st.row.ID]++
				p.storedParent = append(p.storedParent, pos)
			} else {
				p.rows[par].children++
			}
		}
		for _, d := range p.deps[pos] {
			if d.pos < 0 {
				p.edges = append(p.edges, newEdge{item: p.rows[pos].id, dependsOn: d.id})
				continue // resolveExisting counts it when open
			}
			p.edges = append(p.edges, newEdge{item: p.rows[pos].id, dependsOn: p.rows[d.pos].id})
			if st, ok := p.stored[d.pos]; !ok || st.row.Status == string(StatusOpen) {
				p.rows[pos].unmet++
			}
		}
	}
	// Existing ids that a stored item alone depends on are not new edges.
	for id, list := range p.existing {
		kept := list[:0]
		for _, pos := range list {
			if _, ok := p.stored[pos]; !ok {
				kept = append(kept, pos)
			}
		}
		if len(kept) == 0 {
			delete(p.existing, id)
		} else {
			p.existing[id] = kept
		}
	}
	return nil
}

// differences names the fields in which a stored item differs from its
// plan item: every field a plan item gives but its key and children
// (title, body, priority, labels, requires, touches, parent, on_expiry,
// depends_on).
func (p *flatPlan) differences(pos int, r dbq.LockItemsByPlanKeyRow) []string {
	want := p.rows[pos]
	var out []string
	if r.Title != want.title {
		out = append(out, "title")
	}
	if r.Body != want.body {
		out = append(out, "body")
	}
	if r.Priority != want.priority {
		out = append(out, "priority")
	}
	if strings.Join(r.Labels, "\x00") != strings.Join(want.labels, "\x00") {
		out = append(out, "labels")
	}
	if strings.Join(r.Requires, "\x00") != strings.Join(want.requires, "\x00") {
		out = append(out, "requires")
	}
	if strings.Join(r.Touches, "\x00") != strings.Join(want.touches, "\x00") {
		out = append(out, "touches")
	}
	var parentID uuid.UUID
	if par := p.parent[pos]; par >= 0 {
		parentID = p.rows[par].id // a new parent differs, as its id is new
	}
	if got := uuidOrNil(r.ParentID); got != parentID {
		out = append(out, "parent")
	}
	var onExpiry string // "": the project's default, stored as NULL
	if r.OnExpiry != nil {
		onExpiry = *r.OnExpiry
	}
	if onExpiry != want.onExpiry {
		out = append(out, "on_expiry")
	}
	if !sameIDs(r.DependsOn, p.depIDs(pos)) {
		out = append(out, "depends_on") // a new item's id is new, so it differs
	}
	return out
}

// depIDs are the ids of what plan item pos depends on: its plan
// dependencies' rows (stored or new) and the existing items it names.
func (p *flatPlan) depIDs(pos int) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(p.deps[pos]))
	for _, d := range p.deps[pos] {
		if d.pos < 0 {
			out = append(out, d.id)
		} else {
			out = append(out, p.rows[d.pos].id)
		}
	}
	return out
}

// sameIDs reports whether a and b hold the same set of ids.
func sameIDs(a, b []uuid.UUID) bool {
	set := func(ids []uuid.UUID) map[uuid.UUID]bool {
		m := make(map[uuid.UUID]bool, len(ids))
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) != len(sb) {
		return false
	}
	for id := range sa {
		if !sb[id] {
			return false
		}
	}
	return true
}

func uuidOrNil(id *uuid.UUID) uuid.UUID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}

// newRows are the rows of the plan items that do not exist yet.
func (p *flatPlan) newRows() []newRow {
	if len(p.stored) == 0 {
		return p.rows
	}
	out := make([]newRow, 0, len(p.rows)-len(p.stored))
	for pos, r := range p.rows {
		if _, ok := p.stored[pos]; !ok {
			out = append(out, r)
		}
	}
	return out
}

// checkExistingParents refuses a cycle that the new items would close
// through the stored graph: a stored parent waits for its new child, so the
// child must not (through its dependencies on items outside the plan's new
// part) wait for that parent. It runs only when a plan adds children below
// a stored item and depends on stored items.
func (p *flatPlan) checkExistingParents(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	if len(p.newUnder) == 0 {
		return nil
	}
	created := make(map[uuid.UUID]bool, len(p.rows))
	for _, r := range p.newRows() {
		created[r.id] = true
	}
	var sources []uuid.UUID
	for _, e := range p.edges {
		if !created[e.dependsOn] {
			sources = append(sources, e.dependsOn)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	if err := lockGraph(ctx, tx, project); err != nil {
		return err
	}
	for parent := range p.newUnder {
		path, err := findPath(ctx, tx, project, sources, parent)
		if err != nil {
			return err
		}
		if path != nil {
			return conflictf("the plan adds children below item %s, which (through %s) would wait for itself; import the new items elsewhere or drop the dependency", parent, path[0])
		}
	}
	return nil
}

// checkDepths refuses (depth_limit) a plan whose new items below a stored
// item would pass the depth limit of a budget over it: each stored parent
// is checked once, with the depth of the deepest new item below it (new
// items under new top-level items are under no budget yet). The error
// names the line of that deepest item. matchKeys has locked the stored
// parents.
func (p *flatPlan) checkDepths(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	if len(p.newUnder) == 0 {
		return nil
	}
	type deepest struct{ levels, pos int }
	under := map[uuid.UUID]deepest{}
	var order []uuid.UUID // stored parents in plan order: the first refusal is the same each time
	for pos := range p.items {
		if _, ok := p.stored[pos]; ok {
			continue
		}
		levels, up := 1, p.parent[pos]
		for up >= 0 {
			if _, ok := p.stored[up]; ok {
				break
			}
			levels, up = levels+1, p.parent[up]
		}
		if up < 0 {
			continue
		}
		id := p.rows[up].id
		d, ok := under[id]
		if !ok {
			order = append(order, id)
		}
		if !ok || levels > d.levels {
			under[id] = deepest{levels: levels, pos: pos}
		}
	}
	for _, id := range order {
		d := under[id]
		it := p.items[d.pos]
		if err := checkDepth(ctx, tx, project, id, d.levels, "plan", planErrDetails(it)); err != nil {
			if we, ok := err.(*wgerr.Error); ok {
				we.Message = where(it, d.pos) + ": " + we.Message
			}
			return err
		}
	}
	return nil
}

// addChildrenToExisting counts the new children of stored parents.
func (p *flatPlan) addChildrenToExisting(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID) error {
	for id, n := range p.newUnder {
		if err := dbq.New().AddOpenChildren(ctx, tx, dbq.AddOpenChildrenParams{ProjectID: project, ID: id, Delta: n, Now: now}); err != nil {
			return err
		}
	}
	return nil
}

func where(it *PlanItem, pos int) string {
	if it.Line > 0 {
		return fmt.Sprintf("line %d", it.Line)
	}
	return fmt.Sprintf("item %d", pos+1)
}

// resolveExisting locks the existing items the plan depends on, refuses
// unknown ones, and counts the open ones as unmet.
func (p *flatPlan) resolveExisting(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	if len(p.existing) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(p.existing))
	for id := range p.existing {
		ids = append(ids, id)
	}
	rows, err := dbq.New().ShareLockItems(ctx, tx, dbq.ShareLockItemsParams{ProjectID: project, Ids: ids})
	if err != nil {
		return err
	}
	found := make(map[uuid.UUID]bool, len(rows))
	for _, r := range rows {
		found[r.ID] = true
		if r.Status == string(StatusOpen) {
			for _, pos := range p.existing[r.ID] {
				p.rows[pos].unmet++
			}
		}
	}
	for pos, it := range p.items {
		if _, ok := p.stored[pos]; ok {
			continue
		}
		for _, ref := range it.DependsOn {
			id, err := uuid.Parse(strings.TrimSpace(ref))
			if _, isKey := p.keys[strings.TrimSpace(ref)]; err == nil && !isKey && !found[id] {
				return planErr(it, pos, "depends on %s, which is neither a key of the plan nor an item of the project", id)
			}
		}
	}
	return nil
}

func (p *flatPlan) result() ImportResult {
	res := ImportResult{Items: make([]ItemRef, 0, len(p.rows)), Keys: make(map[string]uuid.UUID, len(p.keys))}
	for pos, r := range p.rows {
		if _, ok := p.stored[pos]; ok {
			continue
		}
		st := StateReady
		if r.unmet > 0 || r.children > 0 {
			st = StateBlocked
		}
		res.Items = append(res.Items, ItemRef{ID: r.id, Title: r.title, State: st})
	}
	for k, pos := range p.keys {
		res.Keys[k] = p.rows[pos].id
	}
	if len(p.stored) > 0 {
		res.Existing = make(map[string]ExistingItem, len(p.stored))
		for pos, st := range p.stored {
			res.Existing[p.items[pos].Key] = ExistingItem{ID: st.row.ID, Differs: st.differs}
		}
	}
	return res
}

func (p *flatPlan) cycleError(cyc []int) error {
	e := &CycleError{}
	for _, pos := range cyc {
		it := p.items[pos]
		e.Cycle = append(e.Cycle, ItemRef{ID: p.rows[pos].id, Title: p.rows[pos].title, State: StateBlocked})
		name := strings.TrimSpace(it.Key)
		if name == "" {
			name = fmt.Sprintf("%q", p.rows[pos].title)
		}
		e.Keys = append(e.Keys, name)
		e.Lines = append(e.Lines, it.Line)
	}
	return e
}
