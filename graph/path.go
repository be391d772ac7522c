package graph

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// CriticalPath returns the longest chain of unfinished prerequisites that
// ends at id, first item first and id last: following dependencies and open
// children (a parent waits for its children), through open items only. The
// chain of a done or cancelled item, or of an item with no open
// prerequisite, is the item alone. Ties go to the earlier-created item.
//
// Errors: not_found when the item is not in the project.
func (s *Service) CriticalPath(ctx context.Context, project, id uuid.UUID) ([]ItemRef, error) {
	now := s.clock.Now()
	q := dbq.New()
	var out []ItemRef
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		it, err := getItem(ctx, tx, now, project, id)
		if err != nil {
			return err
		}
		self := ItemRef{ID: it.ID, Title: it.Title, State: it.State}
		if it.Status != StatusOpen {
			out = []ItemRef{self}
			return nil
		}
		pairs, err := q.OpenPrerequisiteEdges(ctx, tx, dbq.OpenPrerequisiteEdgesParams{ProjectID: project, ID: id})
		if err != nil {
			return err
		}
		waits := map[uuid.UUID][]uuid.UUID{}
		nodes := []uuid.UUID{id}
		seen := map[uuid.UUID]bool{id: true}
		for _, p := range pairs {
			if p.Via == uuid.Nil {
				continue
			}
			waits[p.Via] = append(waits[p.Via], p.Node)
			if !seen[p.Node] {
				seen[p.Node] = true
				nodes = append(nodes, p.Node)
			}
		}
		rows, err := q.ItemRefs(ctx, tx, dbq.ItemRefsParams{Now: now, ProjectID: project, Ids: nodes})
		if err != nil {
			return err
		}
		refs := make(map[uuid.UUID]ItemRef, len(rows))
		order := make(map[uuid.UUID]int64, len(rows))
		for _, r := range rows {
			refs[r.ID] = ItemRef{ID: r.ID, Title: r.Title, State: State(r.State)}
			order[r.ID] = r.Seq
		}
		chain := longestChain(id, waits, order)
		out = make([]ItemRef, len(chain))
		for i, n := range chain {
			out[len(chain)-1-i] = refs[n]
		}
		return nil
	})
	return out, err
}

// longestChain returns the longest path from start along waits (start
// first). waits must be acyclic; a cycle is cut where it is met. Ties go to
// the successor with the lower order.
func longestChain(start uuid.UUID, waits map[uuid.UUID][]uuid.UUID, order map[uuid.UUID]int64) []uuid.UUID {
	length := map[uuid.UUID]int{}
	next := map[uuid.UUID]uuid.UUID{}
	onStack := map[uuid.UUID]bool{}
	var visit func(n uuid.UUID) int
	visit = func(n uuid.UUID) int {
		if l, ok := length[n]; ok {
			return l
		}
		onStack[n] = true
		best, bestNext := 0, uuid.Nil
		for _, m := range waits[n] {
			if onStack[m] {
				continue
			}
			l := visit(m)
			if l > best || (l == best && bestNext != uuid.Nil && order[m] < order[bestNext]) {
				best, bestNext = l, m
			}
		}
		onStack[n] = false
		length[n] = best + 1
		next[n] = bestNext
		return best + 1
	}
	visit(start)
	var chain []uuid.UUID
	for n := start; n != uuid.Nil; n = next[n] {
		chain = append(chain, n)
	}
	return chain
}

// Bounds of Subgraph.
const (
	DefaultSubgraphNodes = 500
	MaxSubgraphNodes     = 10000
	DefaultSubgraphDepth = 2
	MaxSubgraphDepth     = 50
	// MaxSubgraphEdges bounds the edges of one answer: its nodes are capped
	// at MaxSubgraphNodes, but the edges among them grow with the square of
	// their number (a dense plan of 700 items has 244,650), and each costs
	// the replica memory and the client bytes. 50,000 edges is more than
	// 300 items each waiting for every earlier one, and 5 edges for each of
	// MaxSubgraphNodes in a graph of ordinary density.
	MaxSubgraphEdges = 50000
)

// Subgraph returns the project's graph (around nil: items in creation
// order) or the items within depth edges of around (dependencies,
// dependents, parent and children count as one step each), at most limit
// nodes (Truncated when more exist), the edges among them, and the longest
// chain of unfinished items among them (CriticalPath, first prerequisite
// first). limit <= 0 means 500 and is capped at 10,000; depth <= 0 means 2
// and is capped at 50.
//
// Errors: not_found (field "around") when around is not in the project.
func (s *Service) Subgraph(ctx context.Context, project uuid.UUID, around *uuid.UUID, depth, limit int) (Subgraph, error) {
	if limit <= 0 {
		limit = DefaultSubgraphNodes
	}
	limit = min(limit, MaxSubgraphNodes)
	if depth <= 0 {
		depth = DefaultSubgraphDepth
	}
	depth = min(depth, MaxSubgraphDepth)
	now := s.clock.Now()
	q := dbq.New()
	var g Subgraph
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		var ids []uuid.UUID
		if around == nil {
			rows, err := q.ProjectItemRefs(ctx, tx, dbq.ProjectItemRefsParams{Now: now, ProjectID: project, MaxRows: int32(limit + 1)})
			if err != nil {
				return err
			}
			if len(rows) > limit {
				rows, g.Truncated = rows[:limit], true
			}
			for _, r := range rows {
				ids = append(ids, r.ID)
			}
		} else {
			if _, err := getItem(ctx, tx, now, project, *around); err != nil {
				if errors.Is(err, wgerr.NotFound) {
					return &wgerr.Error{Code: wgerr.CodeNotFound, Field: "around",
						Message: "around: item " + around.String() + " not found"}
				}
				return err
			}
			var err error
			if ids, g.Truncated, err = neighbourhoodIDs(ctx, tx, project, *around, depth, limit); err != nil {
				return err
			}
		}
		return fillSubgraph(ctx, tx, now, project, ids, &g)
	})
	return g, err
}

// neighbourhoodIDs walks breadth first from around, depth steps, keeping at
// most limit ids.
func neighbourhoodIDs(ctx context.Context, tx pgx.Tx, project, around uuid.UUID, depth, limit int) ([]uuid.UUID, bool, error) {
	ids := []uuid.UUID{around}
	seen := map[uuid.UUID]bool{around: true}
	frontier := ids
	for d := 0; d < depth && len(frontier) > 0; d++ {
		next, err := dbq.New().NeighbourIDs(ctx, tx, dbq.NeighbourIDsParams{ProjectID: project, Ids: frontier})
		if err != nil {
			return nil, false, err
		}
		frontier = nil
		for _, n := range next {
			if seen[n] {
				continue
			}
			if len(ids) == limit {
				return ids, true, nil
			}
			seen[n] = true
			ids = append(ids, n)
			frontier = append(frontier, n)
		}
	}
	return ids, false, nil
}

// fillSubgraph reads the nodes and the edges among ids and computes the
// critical path among the unfinished ones. When the edges among ids are
// more than MaxSubgraphEdges, it keeps the longest prefix of ids whose
// edges fit, and sets Truncated.
func fillSubgraph(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, ids []uuid.UUID, g *Subgraph) error {
	return fillSubgraphWithin(ctx, tx, now, project, ids, MaxSubgraphEdges, g)
}

// fillSubgraphWithin is fillSubgraph with at most maxEdges edges: the
// answer holds the first k of ids (k as large as fits) and every edge
// among them. An edge's reach is the position (1-based) in ids of its
// later end, so the edges among the first k ids are those of reach <= k;
// when more than maxEdges edges exist, the (maxEdges+1)-th smallest reach
// is where the prefix ends. Only that many dependency edges are read.
func fillSubgraphWithin(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, ids []uuid.UUID, maxEdges int, g *Subgraph) error {
	q := dbq.New()
	rows, err := q.ItemRefs(ctx, tx, dbq.ItemRefsParams{Now: now, ProjectID: project, Ids: ids})
	if err != nil {
		return err
	}
	pos := make(map[uuid.UUID]int64, len(ids))
	for i, id := range ids {
		pos[id] = int64(i) + 1
	}
	type reached struct {
		Edge
		reach int64
	}
	var children []reached
	for _, r := range rows {
		if r.ParentID != nil && pos[*r.ParentID] != 0 {
			children = append(children, reached{Edge{From: r.ID, To: *r.ParentID, Kind: EdgeChildOf}, max(pos[r.ID], pos[*r.ParentID])})
		}
	}
	deps, err := q.EdgesAmong(ctx, tx, dbq.EdgesAmongParams{ProjectID: project, Ids: ids, MaxRows: int32(maxEdges + 1)})
	if err != nil {
		return err
	}
	// cut: the nodes kept are those before it (all of them unless cut).
	cut := int64(len(ids)) + 1
	if len(children)+len(deps) > maxEdges {
		reaches := make([]int64, 0, len(children)+len(deps))
		for _, e := range children {
			reaches = append(reaches, e.reach)
		}
		for _, d := range deps {
			reaches = append(reaches, d.Reach)
		}
		slices.Sort(reaches)
		cut, g.Truncated = reaches[maxEdges], true
	}
	in := make(map[uuid.UUID]bool, len(rows))
	open := make(map[uuid.UUID]bool, len(rows))
	order := make(map[uuid.UUID]int64, len(rows))
	kept := rows[:0:0]
	g.Nodes = make([]ItemRef, 0, len(rows))
	for _, r := range rows {
		if pos[r.ID] >= cut {
			continue
		}
		kept = append(kept, r)
		g.Nodes = append(g.Nodes, ItemRef{ID: r.ID, Title: r.Title, State: State(r.State)})
		in[r.ID] = true
		order[r.ID] = r.Seq
		open[r.ID] = r.State != string(StateDone) && r.State != string(StateCancelled)
	}
	g.Edges = []Edge{}
	waits := map[uuid.UUID][]uuid.UUID{}
	addWait := func(waiter, prereq uuid.UUID) {
		if open[waiter] && open[prereq] {
			waits[waiter] = append(waits[waiter], prereq)
		}
	}
	for _, e := range children {
		if e.reach < cut {
			g.Edges = append(g.Edges, e.Edge)
			addWait(e.To, e.From)
		}
	}
	for _, d := range deps {
		if d.Reach < cut {
			g.Edges = append(g.Edges, Edge{From: d.ItemID, To: d.DependsOnID, Kind: EdgeDependsOn})
			addWait(d.ItemID, d.DependsOnID)
		}
	}
	g.CriticalPath = []uuid.UUID{}
	best := longestOverall(kept, open, waits, order)
	for i := len(best) - 1; i >= 0; i-- {
		g.CriticalPath = append(g.CriticalPath, best[i])
	}
	return nil
}

// longestOverall returns the longest waits-for chain among the open nodes
// (waiter first).
func longestOverall(rows []dbq.ItemRefsRow, open map[uuid.UUID]bool, waits map[uuid.UUID][]uuid.UUID, order map[uuid.UUID]int64) []uuid.UUID {
	var starts []uuid.UUID
	for _, r := range rows {
		if open[r.ID] {
			starts = append(starts, r.ID)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	w := make(map[uuid.UUID][]uuid.UUID, len(waits)+1)
	for k, v := range waits {
		w[k] = v
	}
	// A virtual root waiting for every open node reduces this to
	// longestChain.
	w[uuid.Max] = starts
	return longestChain(uuid.Max, w, order)[1:]
}
