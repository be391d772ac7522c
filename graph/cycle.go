package graph

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// CycleError refuses an edge that would close a cycle in the waits-for
// graph (dependencies and parent/child edges). Cycle lists the items in
// waits-for order and repeats the first at the end: Cycle[i] waits for
// Cycle[i+1]. For a plan, Keys (and Lines) name the plan items instead.
//
// errors.Is(err, wgerr.DependencyCycle) holds; errors.As to *wgerr.Error
// gives Code dependency_cycle with Details{"cycle": [ids...]}, or for a
// plan Details{"keys": [...], "lines": [...]} (lines when the plan has them).
type CycleError struct {
	Cycle []ItemRef
	Keys  []string
	Lines []int
}

// Error names the cycle, e.g. `dependency cycle: "A" -> "B" -> "A"`.
func (e *CycleError) Error() string {
	names := make([]string, 0, len(e.Cycle))
	for i, r := range e.Cycle {
		switch {
		case i < len(e.Keys) && i < len(e.Lines) && e.Lines[i] > 0:
			names = append(names, fmt.Sprintf("%s (line %d)", e.Keys[i], e.Lines[i]))
		case i < len(e.Keys) && e.Keys[i] != "":
			names = append(names, e.Keys[i])
		default:
			names = append(names, fmt.Sprintf("%q (%s)", r.Title, r.ID))
		}
	}
	return "dependency cycle: " + strings.Join(names, " -> ")
}

// Unwrap returns the wgerr form of the cycle.
func (e *CycleError) Unwrap() error {
	ids := make([]string, len(e.Cycle))
	for i, r := range e.Cycle {
		ids[i] = r.ID.String()
	}
	details := map[string]any{"cycle": ids}
	if len(e.Keys) > 0 {
		// A plan's cycle: its items were never stored, so their ids mean
		// nothing to the caller; the keys (and lines, when given) do.
		details = map[string]any{"keys": e.Keys}
		for _, l := range e.Lines {
			if l > 0 {
				details["lines"] = e.Lines
				break
			}
		}
	}
	return &wgerr.Error{Code: wgerr.CodeDependencyCycle, Message: e.Error(), Details: details}
}

// Is matches wgerr.DependencyCycle.
func (e *CycleError) Is(target error) bool {
	t, ok := target.(*wgerr.Error)
	return ok && t.Code == wgerr.CodeDependencyCycle && t.Message == ""
}

// lockGraph serialises shape changes of the project's waits-for graph until
// the transaction ends.
func lockGraph(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	return dbq.New().LockProjectGraph(ctx, tx, project)
}

// findPath returns a waits-for path from one of the sources to target
// (source first, target last), or nil when target is unreachable. It must
// run under lockGraph to be a sound cycle check.
func findPath(ctx context.Context, tx pgx.Tx, project uuid.UUID, sources []uuid.UUID, target uuid.UUID) ([]uuid.UUID, error) {
	rows, err := dbq.New().WaitsForReach(ctx, tx, dbq.WaitsForReachParams{ProjectID: project, Sources: sources})
	if err != nil {
		return nil, err
	}
	pred := make(map[uuid.UUID]uuid.UUID, len(rows))
	for _, r := range rows {
		if _, seen := pred[r.Node]; !seen || r.Via == uuid.Nil {
			pred[r.Node] = r.Via
		}
	}
	if _, ok := pred[target]; !ok {
		return nil, nil
	}
	// Walk back from target; pred of a source is the nil uuid. A node may
	// have been recorded through a longer route, so guard against loops.
	var path []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for n := target; n != uuid.Nil && !seen[n]; n = pred[n] {
		seen[n] = true
		path = append(path, n)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, nil
}

// cycleError builds a CycleError for the given ids (first repeated at the
// end by the caller), reading titles and states.
func cycleError(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, cycle []uuid.UUID, extra map[uuid.UUID]ItemRef) error {
	refs, err := refsByID(ctx, tx, now, project, cycle)
	if err != nil {
		return err
	}
	out := &CycleError{Cycle: make([]ItemRef, len(cycle))}
	for i, id := range cycle {
		if r, ok := refs[id]; ok {
			out.Cycle[i] = r
		} else if r, ok := extra[id]; ok {
			out.Cycle[i] = r
		} else {
			out.Cycle[i] = ItemRef{ID: id}
		}
	}
	return out
}

// keyCycle finds a cycle among new items given as adjacency lists over
// indexes (waits[i] = indexes item i waits for). It returns the cycle in
// waits-for order with the first index repeated at the end, or nil.
func keyCycle(waits [][]int) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(waits))
	parent := make([]int, len(waits))
	type frame struct{ node, next int }
	for start := range waits {
		if color[start] != white {
			continue
		}
		stack := []frame{{start, 0}}
		color[start] = grey
		parent[start] = -1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(waits[top.node]) {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			m := waits[top.node][top.next]
			top.next++
			switch color[m] {
			case white:
				color[m] = grey
				parent[m] = top.node
				stack = append(stack, frame{m, 0})
			case grey:
				// top.node -> m closes a cycle: m ... top.node -> m.
				cyc := []int{top.node}
				for n := top.node; n != m; {
					n = parent[n]
					cyc = append(cyc, n)
				}
				for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
					cyc[i], cyc[j] = cyc[j], cyc[i]
				}
				return append(cyc, m)
			}
		}
	}
	return nil
}

// Waiters returns up to limit of the items that wait for id, transitively
// and whatever their status (the items that depend on it and its parent,
// then theirs): a dependency of id on any of them would be refused as a
// cycle. more reports that there are others beyond limit; the walk stops
// there, so its work is bounded by limit. An item unknown has none.
func (s *Service) Waiters(ctx context.Context, project, id uuid.UUID, limit int) (ids []uuid.UUID, more bool, err error) {
	err = db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		ids, err = dbq.New().WaitersOf(ctx, tx, dbq.WaitersOfParams{ProjectID: project, ID: id, MaxRows: int32(limit) + 1})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if len(ids) > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}
