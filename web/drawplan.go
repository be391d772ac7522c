package web

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// drawPlan is what a picture will draw, decided before any layout.
type drawPlan struct {
	edges  []graphEdge
	rank   []int
	reason string // set when the graph is summarised instead
}

// planDrawing bounds a picture: all its arrows when they fit the limits,
// else only those no longer chain implies (the critical path's arrows are
// always kept), else a summary. Its cost is O(n + e) plus O(e·n/64) for
// the reduction, with n at most MaxNodes.
func planDrawing(nodes []graphNode, edges []graphEdge, lim DrawLimits) drawPlan {
	index := make(map[uuid.UUID]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	var pairs [][2]int
	var kept []graphEdge
	for _, e := range edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 && from != to {
			pairs = append(pairs, [2]int{from, to})
			kept = append(kept, e)
		}
	}
	rank := ranks(len(nodes), pairs)
	p := drawPlan{edges: kept, rank: rank}
	if len(nodes) > lim.MaxNodes {
		p.reason = fmt.Sprintf("%d items are more than the %d a picture draws", len(nodes), lim.MaxNodes)
		return p
	}
	if len(pairs) <= lim.MaxEdges && cells(rank, pairs) <= lim.MaxCells {
		return p
	}
	keep := make([]bool, len(kept))
	for i, e := range kept {
		keep[i] = e.Critical
	}
	reduced, ok := transitiveReduction(len(nodes), pairs, keep)
	if ok {
		var rp [][2]int
		var re []graphEdge
		for _, i := range reduced {
			rp, re = append(rp, pairs[i]), append(re, kept[i])
		}
		rank = ranks(len(nodes), rp)
		if len(rp) <= lim.MaxEdges && cells(rank, rp) <= lim.MaxCells {
			return drawPlan{edges: re, rank: rank}
		}
		p.rank = rank
	}
	p.reason = fmt.Sprintf("%d items with %d arrows are more than a picture draws (at most %d arrows, %d items and bends)",
		len(nodes), len(pairs), lim.MaxEdges, lim.MaxCells)
	return p
}

// summary lists the nodes level by level.
func (p drawPlan) summary(nodes []graphNode) drawing {
	levels := 0
	for _, r := range p.rank {
		levels = max(levels, r+1)
	}
	out := make([]drawLevel, levels)
	for i, n := range nodes {
		out[p.rank[i]].Items = append(out[p.rank[i]].Items, n)
	}
	for i := range out {
		out[i].Level = i + 1
	}
	return drawing{Summary: out, Reason: p.reason, Items: len(nodes), Arrows: len(p.edges)}
}

// transitiveReduction returns the indexes of the edges that no other path
// implies, plus those marked keep; ok is false when the graph has a cycle.
// Duplicate edges keep their first. Cost O(e·n/64).
func transitiveReduction(n int, edges [][2]int, keep []bool) ([]int, bool) {
	out := make([][]int, n) // edge indexes by tail
	indeg := make([]int, n)
	for i, e := range edges {
		out[e[0]] = append(out[e[0]], i)
		indeg[e[1]]++
	}
	var topo []int
	for v := range n {
		if indeg[v] == 0 {
			topo = append(topo, v)
		}
	}
	for i := 0; i < len(topo); i++ {
		for _, ei := range out[topo[i]] {
			if w := edges[ei][1]; indeg[w]-1 == 0 {
				topo = append(topo, w)
				indeg[w] = 0
			} else {
				indeg[w]--
			}
		}
	}
	if len(topo) != n {
		return nil, false
	}
	pos := make([]int, n)
	for i, v := range topo {
		pos[v] = i
	}
	words := (n + 63) / 64
	reach := make([][]uint64, n) // reach[v]: nodes reachable from v
	var kept []int
	for i := n - 1; i >= 0; i-- {
		v := topo[i]
		succ := out[v]
		// nearest successors first: a farther one can only be implied by
		// a nearer one
		sorted := slices.Clone(succ)
		slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(pos[edges[a][1]], pos[edges[b][1]]) })
		r := make([]uint64, words)
		for _, ei := range sorted {
			w := edges[ei][1]
			covered := r[w/64]&(1<<(w%64)) != 0
			if !covered || (keep[ei] && !keptAlready(edges[ei], edges, kept)) {
				kept = append(kept, ei)
			}
			r[w/64] |= 1 << (w % 64)
			for k, x := range reach[w] {
				r[k] |= x
			}
		}
		reach[v] = r
	}
	return kept, true
}

// keptAlready reports whether an edge with the same ends is already kept,
// so that a duplicate of a kept arrow is drawn once.
func keptAlready(e [2]int, edges [][2]int, kept []int) bool {
	for _, k := range kept {
		if edges[k] == e {
			return true
		}
	}
	return false
}
