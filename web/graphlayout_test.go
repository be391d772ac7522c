package web

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomDAG is n nodes with each forward pair an edge with probability p.
func randomDAG(r *rand.Rand, n int, p float64) [][2]int {
	var edges [][2]int
	for a := range n {
		for b := a + 1; b < n; b++ {
			if r.Float64() < p {
				edges = append(edges, [2]int{a, b})
			}
		}
	}
	r.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	return edges
}

// closure is reachability by brute force (Floyd-Warshall).
func closure(n int, edges [][2]int) [][]bool {
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	for _, e := range edges {
		reach[e[0]][e[1]] = true
	}
	for k := range n {
		for i := range n {
			for j := range n {
				reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
			}
		}
	}
	return reach
}

func TestTransitiveReduction(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 2 + r.IntN(25)
		edges := randomDAG(r, n, r.Float64())
		keep := make([]bool, len(edges))
		for i := range keep {
			keep[i] = r.IntN(10) == 0
		}
		kept, ok := transitiveReduction(n, edges, keep)
		if !ok {
			t.Fatalf("round %d: a DAG was taken for a cycle", round)
		}
		full := closure(n, edges)
		var reduced [][2]int
		for _, i := range kept {
			reduced = append(reduced, edges[i])
		}
		if got := closure(n, reduced); !slices.EqualFunc(got, full, slices.Equal) {
			t.Fatalf("round %d: the reduction changed what waits for what", round)
		}
		in := map[int]bool{}
		for _, i := range kept {
			in[i] = true
		}
		for i, e := range edges {
			implied := false // by a path through another node
			for k := range n {
				if k != e[0] && k != e[1] && full[e[0]][k] && full[k][e[1]] {
					implied = true
				}
			}
			switch {
			case keep[i] && !in[i]:
				t.Fatalf("round %d: kept edge %v was left out", round, e)
			case !implied && !in[i]:
				t.Fatalf("round %d: edge %v is implied by no other path but was left out", round, e)
			case implied && !keep[i] && in[i]:
				t.Fatalf("round %d: edge %v is implied by another path but was drawn", round, e)
			}
		}
	}
	if _, ok := transitiveReduction(2, [][2]int{{0, 1}, {1, 0}}, []bool{false, false}); ok {
		t.Error("a cycle was reduced")
	}
}

func TestLayout(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 100 {
		n := 1 + r.IntN(40)
		edges := randomDAG(r, n, r.Float64()*0.3)
		g := layoutGraph{size: make([][2]float64, n), edges: edges, rankGap: 40, nodeGap: 10}
		for i := range g.size {
			g.size[i] = [2]float64{80 + r.Float64()*100, 30 + r.Float64()*30}
		}
		rank := ranks(n, edges)
		for _, e := range edges {
			if rank[e[1]] <= rank[e[0]] {
				t.Fatalf("round %d: edge %v goes from level %d to %d", round, e, rank[e[0]], rank[e[1]])
			}
		}
		res, err := layout(context.Background(), g, rank)
		if err != nil {
			t.Fatal(err)
		}
		// The nodes of a level do not overlap and lie inside the picture.
		byLevel := map[int][]int{}
		for v := range n {
			byLevel[rank[v]] = append(byLevel[rank[v]], v)
			c, s := res.centre[v], g.size[v]
			for ax := range 2 {
				if c[ax]-s[ax]/2 < -1e-6 || c[ax]+s[ax]/2 > res.extent[ax]+1e-6 {
					t.Fatalf("round %d: node %d outside the picture", round, v)
				}
			}
		}
		for _, vs := range byLevel {
			slices.SortFunc(vs, func(a, b int) int { return int(math.Copysign(1, res.centre[a][1]-res.centre[b][1])) })
			for i := 1; i < len(vs); i++ {
				a, b := vs[i-1], vs[i]
				if gap := res.centre[b][1] - res.centre[a][1]; gap < (g.size[a][1]+g.size[b][1])/2+g.nodeGap-1e-6 {
					t.Fatalf("round %d: nodes %d and %d overlap", round, a, b)
				}
			}
		}
		// Each arrow leaves its tail's side and enters its head's.
		for i, e := range edges {
			p := res.paths[i]
			first, last := p[0], p[len(p)-1]
			if math.Abs(first[0]-(res.centre[e[0]][0]+g.size[e[0]][0]/2)) > 1e-6 || math.Abs(first[1]-res.centre[e[0]][1]) > 1e-6 {
				t.Fatalf("round %d: edge %v starts at %v, not at its tail", round, e, first)
			}
			if math.Abs(last[0]-(res.centre[e[1]][0]-g.size[e[1]][0]/2)) > 1e-6 || math.Abs(last[1]-res.centre[e[1]][1]) > 1e-6 {
				t.Fatalf("round %d: edge %v ends at %v, not at its head", round, e, last)
			}
			if len(p) != rank[e[1]]-rank[e[0]]+1 {
				t.Fatalf("round %d: edge %v has %d points across %d levels", round, e, len(p), rank[e[1]]-rank[e[0]])
			}
		}
	}
}

func TestLayoutCycle(t *testing.T) {
	t.Parallel()
	// Cycles are refused when they are written; a picture still survives
	// one.
	g := layoutGraph{size: [][2]float64{{80, 30}, {80, 30}, {80, 30}}, edges: [][2]int{{0, 1}, {1, 2}, {2, 0}}, rankGap: 40, nodeGap: 10}
	res, err := layout(context.Background(), g, ranks(3, g.edges))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range res.paths {
		if len(p) < 2 {
			t.Errorf("edge %d not routed", i)
		}
	}
}

func TestLayoutCancelled(t *testing.T) {
	t.Parallel()
	edges := randomDAG(rand.New(rand.NewPCG(5, 6)), 60, 0.2)
	g := layoutGraph{size: make([][2]float64, 60), edges: edges, rankGap: 40, nodeGap: 10}
	for i := range g.size {
		g.size[i] = [2]float64{80, 30}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := layout(ctx, g, ranks(60, edges)); err == nil {
		t.Fatal("a layout with a cancelled context ran to the end")
	}
}
