package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// TestBlockedByIsBounded: an item lists at most MaxBlockedByRefs of its
// open prerequisites and of its open children (the earliest created), and
// counts all of them. A plan of 400 items each waiting for every earlier
// one, with 500-character titles (a 619 KB plan), made one page of 500
// items 46 MB of JSON: eight such pages at once took a replica to 1.3 GB.
func TestBlockedByIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	const n = MaxBlockedByRefs + 7
	var prereqs []uuid.UUID
	for i := 0; i < n; i++ {
		prereqs = append(prereqs, f.mustItem(t, itemOpts{Title: fmt.Sprintf("prerequisite %d", i)}).ID)
	}
	done := f.mustItem(t, itemOpts{Title: "finished prerequisite"})
	if _, err := f.svc.Cancel(ctx, f.project, done.ID, "test", "not needed"); err != nil {
		t.Fatal(err)
	}
	waiter := f.mustItem(t, itemOpts{Title: "waiter", DependsOn: append([]uuid.UUID{done.ID}, prereqs...)})
	parent := f.mustItem(t, itemOpts{Title: "parent"})
	var kids []uuid.UUID
	for i := 0; i < n; i++ {
		kids = append(kids, f.mustItem(t, itemOpts{Title: fmt.Sprintf("child %d", i), Parent: &parent.ID}).ID)
	}
	check := func(t *testing.T, it Item) {
		t.Helper()
		b := it.BlockedBy
		switch it.ID {
		case waiter.ID:
			if b.DependenciesTotal != n || len(b.Dependencies) != MaxBlockedByRefs {
				t.Fatalf("waiter: %d prerequisites listed, %d counted; want %d of %d", len(b.Dependencies), b.DependenciesTotal, MaxBlockedByRefs, n)
			}
			for i, r := range b.Dependencies {
				if r.ID != prereqs[i] {
					t.Fatalf("prerequisite %d is %s, want the earliest created first", i, r.Title)
				}
			}
		case parent.ID:
			if b.ChildrenTotal != n || len(b.Children) != MaxBlockedByRefs {
				t.Fatalf("parent: %d children listed, %d counted; want %d of %d", len(b.Children), b.ChildrenTotal, MaxBlockedByRefs, n)
			}
			for i, r := range b.Children {
				if r.ID != kids[i] {
					t.Fatalf("child %d is %s, want the earliest created first", i, r.Title)
				}
			}
		default:
			if len(b.Dependencies) != b.DependenciesTotal || len(b.Children) != b.ChildrenTotal {
				t.Fatalf("%s: %d/%d prerequisites, %d/%d children", it.Title, len(b.Dependencies), b.DependenciesTotal, len(b.Children), b.ChildrenTotal)
			}
		}
	}
	t.Run("List", func(t *testing.T) {
		page, err := f.svc.ListItems(ctx, f.project, ListFilter{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, it := range page.Items {
			if it.ID == waiter.ID || it.ID == parent.ID {
				seen++
			}
			check(t, it)
		}
		if seen != 2 {
			t.Fatalf("the waiter and the parent are not listed")
		}
	})
	t.Run("Get", func(t *testing.T) {
		for _, id := range []uuid.UUID{waiter.ID, parent.ID, prereqs[0]} {
			it, err := f.svc.Item(ctx, f.project, id)
			if err != nil {
				t.Fatal(err)
			}
			check(t, it)
		}
	})
}
