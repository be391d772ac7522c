package web

import (
	"cmp"
	"context"
	"slices"
)

// The layout is a layered (Sugiyama-style) drawing written for these
// pictures: every item sits on a level (its longest chain of
// prerequisites), an arrow that spans several levels bends once per level
// it crosses, items within a level are ordered to cross few arrows
// (barycentre sweeps) and placed as near their neighbours as the spacing
// allows (isotonic regression per level). Its cost grows with the items
// plus bends (cells) and the arrows, which the caller bounds before it
// starts; it checks its context between passes.
//
// Coordinates are (r, o): r runs along the levels (left to right, or top
// to bottom for a vertical picture), o across them.

// layoutGraph is what the layout needs of a picture.
type layoutGraph struct {
	// size is each node's extent along r and along o.
	size [][2]float64
	// edges run from the item that comes first to the item that waits.
	edges [][2]int
	// rankGap and nodeGap are the spaces between levels and between nodes
	// of one level.
	rankGap, nodeGap float64
}

// layoutResult places the nodes (centres) and routes the edges (points
// from tail to head, bends included).
type layoutResult struct {
	centre [][2]float64
	paths  [][][2]float64
	extent [2]float64
}

// ranks gives each node a level: sources first, each other node one past
// its latest prerequisite, and a node without prerequisites just before
// the earliest node that waits for it. An edge against the topological
// order (only a cycle makes one) is laid out reversed. Cost O(n + e).
func ranks(n int, edges [][2]int) []int {
	indeg := make([]int, n)
	out := make([][]int, n)
	for _, e := range edges {
		if e[0] != e[1] {
			out[e[0]] = append(out[e[0]], e[1])
			indeg[e[1]]++
		}
	}
	order := make([]int, 0, n)
	queued := make([]bool, n)
	for v := range n {
		if indeg[v] == 0 {
			order, queued[v] = append(order, v), true
		}
	}
	for i := 0; i < len(order); i++ {
		for _, w := range out[order[i]] {
			if indeg[w]--; indeg[w] == 0 && !queued[w] {
				order, queued[w] = append(order, w), true
			}
		}
	}
	for v := range n { // nodes on a cycle, in input order
		if !queued[v] {
			order, queued[v] = append(order, v), true
		}
	}
	pos := make([]int, n)
	for i, v := range order {
		pos[v] = i
	}
	// before[v] are the nodes that must sit on an earlier level than v.
	before := make([][]int, n)
	after := make([][]int, n)
	for _, e := range edges {
		a, b := e[0], e[1]
		if a == b {
			continue
		}
		if pos[a] > pos[b] {
			a, b = b, a
		}
		before[b] = append(before[b], a)
		after[a] = append(after[a], b)
	}
	rank := make([]int, n)
	for _, v := range order {
		for _, u := range before[v] {
			rank[v] = max(rank[v], rank[u]+1)
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		if len(before[v]) > 0 || len(after[v]) == 0 {
			continue
		}
		first := rank[after[v][0]]
		for _, w := range after[v] {
			first = min(first, rank[w])
		}
		rank[v] = max(rank[v], first-1)
	}
	return rank
}

// cells counts the nodes plus the bends the edges make at the given
// levels: the size of the layered graph the layout works on.
func cells(rank []int, edges [][2]int) int {
	c := len(rank)
	for _, e := range edges {
		if d := rank[e[0]] - rank[e[1]]; d > 1 {
			c += d - 1
		} else if d < -1 {
			c += -d - 1
		}
	}
	return c
}

// layout lays the graph out at the given levels.
func layout(ctx context.Context, g layoutGraph, rank []int) (layoutResult, error) {
	n := len(g.size)
	levels := 0
	for _, r := range rank {
		levels = max(levels, r+1)
	}
	// The layered graph: the nodes, then one virtual node per bend.
	vrank := slices.Clone(rank)
	var up, down [][]int // neighbours one level before and after
	up, down = make([][]int, n), make([][]int, n)
	chains := make([][]int, len(g.edges)) // each edge's vertices, lower level first
	for i, e := range g.edges {
		a, b := e[0], e[1]
		if a == b {
			continue
		}
		if rank[a] > rank[b] {
			a, b = b, a
		}
		chain := []int{a}
		for r := rank[a] + 1; r < rank[b]; r++ {
			vrank = append(vrank, r)
			up, down = append(up, nil), append(down, nil)
			chain = append(chain, len(vrank)-1)
		}
		chain = append(chain, b)
		for j := 1; j < len(chain); j++ {
			down[chain[j-1]] = append(down[chain[j-1]], chain[j])
			up[chain[j]] = append(up[chain[j]], chain[j-1])
		}
		chains[i] = chain
	}
	layer := make([][]int, levels)
	for v, r := range vrank {
		layer[r] = append(layer[r], v)
	}
	at := make([]int, len(vrank)) // position within its level
	for _, l := range layer {
		for i, v := range l {
			at[v] = i
		}
	}
	if err := order(ctx, layer, at, up, down); err != nil {
		return layoutResult{}, err
	}

	// Along r: each level as deep as its deepest node.
	depth := make([]float64, levels)
	for v := range n {
		depth[rank[v]] = max(depth[rank[v]], g.size[v][0])
	}
	levelAt := make([]float64, levels)
	r := 0.0
	for l := range levels {
		levelAt[l] = r + depth[l]/2
		r += depth[l] + g.rankGap
	}
	// Along o: nodes near the mean of their neighbours, in order, apart.
	extent := func(v int) float64 {
		if v < n {
			return g.size[v][1]
		}
		return 0
	}
	gap := func(a, b int) float64 {
		s := (extent(a) + extent(b)) / 2
		switch {
		case a < n && b < n:
			return s + g.nodeGap
		case a < n || b < n:
			return s + g.nodeGap/2
		}
		return s + g.nodeGap/3
	}
	o := make([]float64, len(vrank))
	for _, l := range layer {
		y := 0.0
		for i, v := range l {
			if i > 0 {
				y += gap(l[i-1], v)
			}
			o[v] = y
		}
	}
	for pass := range 8 {
		if err := ctx.Err(); err != nil {
			return layoutResult{}, err
		}
		downward := pass%2 == 0
		for k := range levels {
			l := k
			if !downward {
				l = levels - 1 - k
			}
			nb := up
			if !downward {
				nb = down
			}
			if pass == 7 {
				nb = nil // both sides
			}
			place(layer[l], o, func(v int) []int {
				if nb == nil {
					return append(slices.Clip(up[v]), down[v]...)
				}
				return nb[v]
			}, gap)
		}
	}
	// Shift so the picture starts at 0 on both axes.
	lo, hi := 0.0, 0.0
	for v := range vrank {
		if v == 0 || o[v]-extent(v)/2 < lo {
			lo = o[v] - extent(v)/2
		}
		if v == 0 || o[v]+extent(v)/2 > hi {
			hi = o[v] + extent(v)/2
		}
	}
	res := layoutResult{centre: make([][2]float64, n), paths: make([][][2]float64, len(g.edges))}
	res.extent = [2]float64{max(r-g.rankGap, 0), hi - lo}
	for v := range n {
		res.centre[v] = [2]float64{levelAt[rank[v]], o[v] - lo}
	}
	for i, e := range g.edges {
		chain := chains[i]
		if chain == nil {
			continue
		}
		pts := make([][2]float64, len(chain))
		for j, v := range chain {
			pts[j] = [2]float64{levelAt[vrank[v]], o[v] - lo}
		}
		// Start and end at the nodes' sides, not their centres.
		pts[0][0] += g.size[chain[0]][0] / 2
		pts[len(pts)-1][0] -= g.size[chain[len(chain)-1]][0] / 2
		if chain[0] != e[0] {
			slices.Reverse(pts)
		}
		res.paths[i] = pts
	}
	return res, nil
}

// order reorders each level to cross few edges: barycentre sweeps down and
// up, keeping the best order seen. at is each vertex's position in its
// level, updated in place.
func order(ctx context.Context, layer [][]int, at []int, up, down [][]int) error {
	best := crossings(layer, at, down)
	bestLayer := cloneLayers(layer)
	for sweep := range 12 {
		if best == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if sweep%2 == 0 {
			for l := 1; l < len(layer); l++ {
				sortByBarycentre(layer[l], at, up)
			}
		} else {
			for l := len(layer) - 2; l >= 0; l-- {
				sortByBarycentre(layer[l], at, down)
			}
		}
		if c := crossings(layer, at, down); c < best {
			best, bestLayer = c, cloneLayers(layer)
		}
	}
	for l := range layer {
		copy(layer[l], bestLayer[l])
		for i, v := range layer[l] {
			at[v] = i
		}
	}
	return nil
}

func cloneLayers(layer [][]int) [][]int {
	out := make([][]int, len(layer))
	for i, l := range layer {
		out[i] = slices.Clone(l)
	}
	return out
}

// sortByBarycentre orders a level by the mean position of each vertex's
// neighbours on the adjacent level; a vertex without any keeps its place.
func sortByBarycentre(l []int, at []int, nb [][]int) {
	key := make(map[int]float64, len(l))
	for _, v := range l {
		if len(nb[v]) == 0 {
			key[v] = float64(at[v])
			continue
		}
		s := 0.0
		for _, w := range nb[v] {
			s += float64(at[w])
		}
		key[v] = s / float64(len(nb[v]))
	}
	slices.SortStableFunc(l, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
	for i, v := range l {
		at[v] = i
	}
}

// crossings counts the edge crossings between adjacent levels: for each
// pair of levels, the inversions among the edges sorted by their upper
// end (a Fenwick tree over the lower level's positions).
func crossings(layer [][]int, at []int, down [][]int) int {
	total := 0
	for l := 0; l+1 < len(layer); l++ {
		tree := make([]int, len(layer[l+1])+1)
		seen := 0
		for _, v := range layer[l] { // in order of the upper end
			ends := make([]int, len(down[v]))
			for i, w := range down[v] {
				ends[i] = at[w]
			}
			slices.Sort(ends)
			for _, p := range ends {
				// edges seen so far whose lower end is right of p cross
				le := 0
				for i := p + 1; i > 0; i -= i & -i {
					le += tree[i]
				}
				total += seen - le
			}
			for _, p := range ends {
				for i := p + 1; i < len(tree); i += i & -i {
					tree[i]++
				}
				seen++
			}
		}
	}
	return total
}

// place moves a level's vertices as near the mean position of their
// neighbours (given by nb) as their order and spacing allow: the least
// squares placement under "each at least gap after the one before", by
// pooling adjacent violators.
func place(l []int, o []float64, nb func(int) []int, gap func(a, b int) float64) {
	if len(l) == 0 {
		return
	}
	// With S the cumulative gaps, w = o - S must not decrease.
	offset := make([]float64, len(l))
	for i := 1; i < len(l); i++ {
		offset[i] = offset[i-1] + gap(l[i-1], l[i])
	}
	type block struct {
		sum   float64
		count int
	}
	var blocks []block
	for i, v := range l {
		want := o[v]
		if ns := nb(v); len(ns) > 0 {
			s := 0.0
			for _, w := range ns {
				s += o[w]
			}
			want = s / float64(len(ns))
		}
		blocks = append(blocks, block{want - offset[i], 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/float64(a.count) <= b.sum/float64(b.count) {
				break
			}
			blocks = append(blocks[:len(blocks)-2], block{a.sum + b.sum, a.count + b.count})
		}
	}
	i := 0
	for _, b := range blocks {
		w := b.sum / float64(b.count)
		for range b.count {
			o[l[i]] = w + offset[i]
			i++
		}
	}
}
