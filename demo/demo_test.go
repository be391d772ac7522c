package demo_test

import (
	"context"
	"testing"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/demo"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	authSvc := auth.NewService(pool, nil)

	res, err := demo.Load(ctx, pool, authSvc)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Loaded || res.Token == "" {
		t.Fatalf("first load = %+v", res)
	}
	p, err := authSvc.Authenticate(ctx, res.Token)
	if err != nil || p.Role != auth.RoleHuman {
		t.Fatalf("demo token: %+v %v", p, err)
	}
	g := graph.NewService(pool, nil)
	project, err := g.Project(ctx, demo.Project)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("EveryState", func(t *testing.T) {
		page, err := g.ListItems(ctx, project.ID, graph.ListFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		states := map[graph.State]int{}
		for _, it := range page.Items {
			states[it.State]++
		}
		for _, s := range []graph.State{graph.StateReady, graph.StateLeased, graph.StateBlocked,
			graph.StateAttention, graph.StateDone, graph.StateCancelled} {
			if states[s] == 0 {
				t.Errorf("no %s item (states %v)", s, states)
			}
		}
	})
	t.Run("OpenAttention", func(t *testing.T) {
		open := attention.StateOpen
		page, err := attention.NewService(pool, nil, attention.Config{}).List(ctx, project.ID, attention.Filter{State: &open})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Requests) != 1 || page.Requests[0].Source != attention.SourceWorker || len(page.Requests[0].SuggestedAnswers) != 2 {
			t.Fatalf("open requests = %+v", page.Requests)
		}
	})
	t.Run("LeaseHistory", func(t *testing.T) {
		page, err := lease.NewService(pool, nil, lease.Config{}).History(ctx, project.ID, lease.HistoryFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		outcomes := map[string]int{}
		stale := 0
		for _, l := range page.Leases {
			o := "active"
			if l.Outcome != nil {
				o = string(*l.Outcome)
			}
			outcomes[o]++
			stale += l.StaleCalls
		}
		for _, o := range []string{"active", "completed", "failed", "expired", "released", "decomposed", "attention_requested"} {
			if outcomes[o] == 0 {
				t.Errorf("no %s lease (%v)", o, outcomes)
			}
		}
		if stale == 0 {
			t.Error("no refused stale report recorded")
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		again, err := demo.Load(ctx, pool, authSvc)
		if err != nil {
			t.Fatal(err)
		}
		if again.Loaded || again.Token != "" {
			t.Fatalf("second load = %+v, want nothing done", again)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = 'demo'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("demo projects = %d (%v)", n, err)
		}
	})
}
