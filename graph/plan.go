package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// MaxPlanItems bounds one ImportPlan.
const MaxPlanItems = 50000

// ImportPlan creates a whole plan in ONE transaction: every item (children
// below their plan parent), every dependency (by plan key, or by the id of
// an existing item of the project), with readiness counters computed up
// front and a constant number of statements however large the plan. Keys
// are optional but unique; items are created depth first in plan order.
// With dryRun everything is checked (existing ids too) and the result shows
// the ids the items would get, but nothing is stored.
//
// Errors (nothing is stored): invalid_argument naming the line for a bad
// field, a duplicate key, an unknown key or an id that is not an item of the
// project, or an empty or too large plan; *CycleError (dependency_cycle)
// naming the keys and lines of a cycle among the plan's dependencies and
// parent/child edges.
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
		if err := p.resolveExisting(ctx, tx, project); err != nil {
			return err
		}
		res = p.result()
		if dryRun {
			return errDryRun
		}
		return insertRows(ctx, tx, now, project, by, p.rows, p.edges)
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if err != nil {
		return ImportResult{}, err
	}
	if !dryRun && len(p.rows) >= analyzeAfter {
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
}

func planErr(it *PlanItem, pos int, format string, args ...any) error {
	where := fmt.Sprintf("item %d", pos+1)
	if it.Line > 0 {
		where = fmt.Sprintf("line %d", it.Line)
	}
	return &wgerr.Error{Code: wgerr.CodeInvalid, Field: "plan",
		Message: where + ": " + fmt.Sprintf(format, args...),
		Details: map[string]any{"line": it.Line, "key": it.Key}}
}

func flattenPlan(plan []PlanItem) (*flatPlan, error) {
	p := &flatPlan{keys: map[string]int{}, existing: map[uuid.UUID][]int{}}
	var walk func(items []PlanItem, parent int) error
	walk = func(items []PlanItem, parent int) error {
		for i := range items {
			it := &items[i]
			pos := len(p.items)
			if pos >= MaxPlanItems {
				return wgerr.InvalidField("plan", "has more than %d items", MaxPlanItems)
			}
			p.items = append(p.items, it)
			p.waits = append(p.waits, nil)
			row := newRow{id: uuid.New(), body: it.Body, priority: it.Priority}
			title, err := cleanTitle("title", it.Title)
			if err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			row.title = title
			if err := checkBody("body", it.Body); err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			if row.labels, err = CleanLabels("labels", it.Labels); err != nil {
				return planErr(it, pos, "%s", err.Error())
			}
			if k := strings.TrimSpace(it.Key); k != "" {
				if prev, dup := p.keys[k]; dup {
					return planErr(it, pos, "key %q is already used by %s", k, where(p.items[prev], prev))
				}
				p.keys[k] = pos
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
				if j == pos {
					return nil, planErr(it, pos, "%q cannot depend on itself", ref)
				}
				p.waits[pos] = append(p.waits[pos], j)
				p.edges = append(p.edges, newEdge{item: p.rows[pos].id, dependsOn: p.rows[j].id})
				p.rows[pos].unmet++
				continue
			}
			id, err := uuid.Parse(ref)
			if err != nil {
				return nil, planErr(it, pos, "depends on unknown key %q", ref)
			}
			p.existing[id] = append(p.existing[id], pos)
			p.edges = append(p.edges, newEdge{item: p.rows[pos].id, dependsOn: id})
		}
	}
	return p, nil
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
	res := ImportResult{Items: make([]ItemRef, len(p.rows)), Keys: make(map[string]uuid.UUID, len(p.keys))}
	for i, r := range p.rows {
		st := StateReady
		if r.unmet > 0 || r.children > 0 {
			st = StateBlocked
		}
		res.Items[i] = ItemRef{ID: r.id, Title: r.title, State: st}
	}
	for k, pos := range p.keys {
		res.Keys[k] = p.rows[pos].id
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
