package lease_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestCompleteRacesAddDependency: "B depends on A" added while A's lease is
// completed. Either the completion sees the new edge and releases B, or the
// edge sees A done and never counts it; B's counter ends exact either way
// (checked against a recount), B is ready, and each child's completion
// counts once against its parent.
func TestCompleteRacesAddDependency(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // concurrent transactions
	const n = 40
	parent := f.item(t, graph.NewItem{})
	as := make([]lease.Lease, n)
	bs := make([]graph.Item, n)
	for i := range n {
		// A is a child of parent, so the completion also releases a parent.
		label := fmt.Sprintf("a-%d", i)
		f.item(t, graph.NewItem{ParentID: &parent.ID, Labels: []string{label}})
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{label}})
		if err != nil {
			t.Fatal(err)
		}
		as[i] = c.Lease
		bs[i] = f.item(t, graph.NewItem{})
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			if err := f.graph.AddDependency(f.ctx, f.project, bs[i].ID, as[i].ItemID, "test"); err != nil {
				t.Errorf("AddDependency: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			if _, err := f.leases.Complete(f.ctx, f.project, fence(as[i]), nil, nil); err != nil {
				t.Errorf("Complete: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, b := range bs {
		if got := f.getItem(t, b.ID).State; got != graph.StateReady {
			t.Errorf("dependent %s is %s, want ready", b.ID, got)
		}
	}
	if got := f.getItem(t, parent.ID).State; got != graph.StateReady {
		t.Errorf("parent of %d completed children is %s, want ready", n, got)
	}
	var wrong int
	err := f.conn.QueryRow(f.ctx, `
		SELECT count(*) FROM items i
		WHERE i.project_id = $1 AND (
		    i.unmet_dependencies <> (SELECT count(*) FROM dependencies d
		                             JOIN items p ON p.project_id = d.project_id AND p.id = d.depends_on_id
		                             WHERE d.project_id = i.project_id AND d.item_id = i.id AND p.status = 'open')
		 OR i.open_children <> (SELECT count(*) FROM items c
		                        WHERE c.project_id = i.project_id AND c.parent_id = i.id AND c.status = 'open'))`,
		f.project).Scan(&wrong)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != 0 {
		t.Errorf("%d items' counters differ from a recount", wrong)
	}
	f.checkInvariants(t)
}
