package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
)

// densePlan is a plan of n items where each depends on every earlier one
// (n(n-1)/2 edges): what an agent can post to make a graph answer large.
func densePlan(n int) []PlanItem {
	plan := make([]PlanItem, n)
	for i := range plan {
		plan[i] = PlanItem{Key: fmt.Sprintf("k%d", i), Title: fmt.Sprintf("item %d", i)}
		for j := 0; j < i; j++ {
			plan[i].DependsOn = append(plan[i].DependsOn, fmt.Sprintf("k%d", j))
		}
	}
	return plan
}

// TestSubgraphBoundsEdges: a graph answer holds at most MaxSubgraphEdges
// edges, however dense the graph among its nodes. Over the bound it is the
// longest prefix of its nodes (creation order; nearest first around an
// item) whose edges fit, with every edge among them, and says Truncated.
// (A dense plan of 700 items gave the API 244,650 edges, 27 MB of JSON per
// answer; eight at once took a replica from 150 MB to 970 MB.)
func TestSubgraphBoundsEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	const n = 330 // 54,285 edges
	if n*(n-1)/2 <= MaxSubgraphEdges {
		t.Fatalf("the plan must be over the bound")
	}
	res, err := f.svc.ImportPlan(ctx, f.project, densePlan(n), "test", false)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[uuid.UUID]int{}
	for i := 0; i < n; i++ {
		pos[res.Keys[fmt.Sprintf("k%d", i)]] = i
	}
	// check: the answer is the first k items of order (k maximal), with
	// every edge among them and none beyond.
	check := func(t *testing.T, g Subgraph, order func(uuid.UUID) int) {
		t.Helper()
		k := len(g.Nodes)
		if !g.Truncated {
			t.Errorf("not truncated")
		}
		if len(g.Edges) > MaxSubgraphEdges {
			t.Fatalf("%d edges, over the bound of %d", len(g.Edges), MaxSubgraphEdges)
		}
		if want := k * (k - 1) / 2; len(g.Edges) != want {
			t.Fatalf("%d nodes and %d edges, want every edge among them (%d)", k, len(g.Edges), want)
		}
		if (k+1)*k/2 <= MaxSubgraphEdges {
			t.Fatalf("%d nodes: one more would still fit", k)
		}
		in := map[uuid.UUID]bool{}
		for _, nd := range g.Nodes {
			if o := order(nd.ID); o >= k {
				t.Fatalf("node at position %d of %d kept: not a prefix", o, k)
			}
			in[nd.ID] = true
		}
		for _, e := range g.Edges {
			if !in[e.From] || !in[e.To] {
				t.Fatalf("edge %v -> %v leaves the nodes", e.From, e.To)
			}
		}
		if len(g.CriticalPath) != k {
			t.Fatalf("critical path of %d items among %d open ones in a chain", len(g.CriticalPath), k)
		}
	}
	t.Run("Project", func(t *testing.T) {
		g, err := f.svc.Subgraph(ctx, f.project, nil, 0, MaxSubgraphNodes)
		if err != nil {
			t.Fatal(err)
		}
		check(t, g, func(id uuid.UUID) int { return pos[id] })
	})
	t.Run("Around", func(t *testing.T) {
		// Around the last item every other one is one step away; the
		// breadth-first order puts the item itself first.
		last := res.Keys[fmt.Sprintf("k%d", n-1)]
		g, err := f.svc.Subgraph(ctx, f.project, &last, 1, MaxSubgraphNodes)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) == 0 {
			t.Fatal("no nodes")
		}
		found := false
		for _, nd := range g.Nodes {
			found = found || nd.ID == last
		}
		if !found {
			t.Fatal("the item the graph is around is not in it")
		}
		if len(g.Edges) > MaxSubgraphEdges || !g.Truncated {
			t.Fatalf("%d edges (bound %d), truncated %v", len(g.Edges), MaxSubgraphEdges, g.Truncated)
		}
	})
}

// TestFillSubgraphWithinCutsAtReach: parent links count as edges, and the
// answer is cut where the (bound+1)-th edge's later end lies.
func TestFillSubgraphWithinCutsAtReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	a := f.mustItem(t, itemOpts{Title: "a"})
	b := f.mustItem(t, itemOpts{Title: "b", Parent: &a.ID})
	c := f.mustItem(t, itemOpts{Title: "c", DependsOn: []uuid.UUID{a.ID}})
	d := f.mustItem(t, itemOpts{Title: "d", DependsOn: []uuid.UUID{b.ID, c.ID}})
	ids := []uuid.UUID{a.ID, b.ID, c.ID, d.ID} // reaches: b->a 2, c->a 3, d->b 4, d->c 4
	for _, tc := range []struct {
		max, nodes, edges int
		truncated         bool
	}{{4, 4, 4, false}, {3, 3, 2, true}, {2, 3, 2, true}, {1, 2, 1, true}} {
		t.Run(fmt.Sprintf("Max%d", tc.max), func(t *testing.T) {
			var g Subgraph
			err := db.InReadTx(ctx, f.conn, func(tx pgx.Tx) error {
				return fillSubgraphWithin(ctx, tx, nil, f.project, ids, tc.max, &g)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Nodes) != tc.nodes || len(g.Edges) != tc.edges || g.Truncated != tc.truncated {
				t.Fatalf("%d nodes, %d edges, truncated %v; want %d, %d, %v", len(g.Nodes), len(g.Edges), g.Truncated, tc.nodes, tc.edges, tc.truncated)
			}
			for i, n := range g.Nodes {
				if n.ID != ids[i] {
					t.Fatalf("node %d is %s, want %s", i, n.Title, ids[i])
				}
			}
		})
	}
}
