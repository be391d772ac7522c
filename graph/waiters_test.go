package graph

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestWaiters: the items that wait for an item, transitively, are exactly those whose dependency would be refused as a
// cycle; the walk stops at its limit and says there are more.
func TestWaiters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	parent := f.mustItem(t, itemOpts{Title: "parent"})
	it := f.mustItem(t, itemOpts{Title: "it", Parent: &parent.ID})
	dependent := f.mustItem(t, itemOpts{DependsOn: []uuid.UUID{it.ID}})
	indirect := f.mustItem(t, itemOpts{DependsOn: []uuid.UUID{dependent.ID}})
	onParent := f.mustItem(t, itemOpts{DependsOn: []uuid.UUID{parent.ID}})
	prerequisite := f.mustItem(t, itemOpts{})
	if err := f.svc.AddDependency(ctx, f.project, it.ID, prerequisite.ID, "test"); err != nil {
		t.Fatal(err)
	}
	f.mustItem(t, itemOpts{Title: "unrelated"})

	t.Run("OK", func(t *testing.T) {
		got, more, err := f.svc.Waiters(ctx, f.project, it.ID, 100)
		if err != nil || more {
			t.Fatalf("Waiters: %v, more %v", err, more)
		}
		want := []uuid.UUID{parent.ID, dependent.ID, indirect.ID, onParent.ID}
		slices.SortFunc(got, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		if !slices.Equal(got, want) {
			t.Fatalf("waiters %v, want %v", got, want)
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		got, more, err := f.svc.Waiters(ctx, f.project, it.ID, 2)
		if err != nil || !more || len(got) != 2 {
			t.Fatalf("Waiters limit 2: %d ids, more %v, err %v; want 2, true", len(got), more, err)
		}
	})
}
