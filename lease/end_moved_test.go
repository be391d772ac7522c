package lease_test

import (
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestEndLeaseNeverWithoutItsItem: when the item no longer names a live
// lease (changed under it), the lease's worker cannot end it, on the
// one-statement paths too (the completion and the release sent without a
// transaction around them): the call is lease_lost and the lease stays as
// it was. A database of its own: those paths run on a pool only.
func TestEndLeaseNeverWithoutItsItem(t *testing.T) {
	t.Parallel()
	for name, end := range map[string]func(f fixture, c lease.Claim) error{
		"Complete": func(f fixture, c lease.Claim) error {
			_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
			return err
		},
		"CompleteWithUsage": func(f fixture, c lease.Claim) error {
			_, err := f.leases.CompleteWithUsage(f.ctx, f.project, fence(c.Lease), nil, nil, lease.Usage{TokensIn: 1})
			return err
		},
		"Release": func(f fixture, c lease.Claim) error {
			_, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setupDB(t, lease.Config{})
			f.item(t, graph.NewItem{Title: "moved"})
			c := f.claim(t, "w")
			if _, err := f.pool.Exec(f.ctx, `UPDATE items SET status = 'cancelled', active_lease_id = NULL, finished_at = now()
				WHERE project_id = $1 AND id = $2`, f.project, c.Item.ID); err != nil {
				t.Fatal(err)
			}
			if err := end(f, c); wgerr.CodeOf(err) != wgerr.CodeLeaseLost {
				t.Errorf("ending the lease of a moved item: %v, want lease_lost", err)
			}
			if l := f.getLease(t, c.Lease.ID); l.EndedAt != nil {
				t.Errorf("the lease ended (%s) without its item", *l.Outcome)
			}
		})
	}
}
