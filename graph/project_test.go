package graph

import (
	"context"
	"errors"
	"testing"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestCreateProject(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		for _, name := range []string{"Acme", "team.alpha", "x", "build-2026_11"} {
			p, err := f.svc.CreateProject(ctx, name)
			if err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			byName, err := f.svc.Project(ctx, name)
			if err != nil || byName.ID != p.ID {
				t.Fatalf("%q by name: %v %+v", name, err, byName)
			}
			byID, err := f.svc.Project(ctx, p.ID.String())
			if err != nil || byID.Name != name {
				t.Fatalf("%q by id: %v %+v", name, err, byID)
			}
		}
	})
	t.Run("ErrAlreadyExists", func(t *testing.T) {
		if _, err := f.svc.CreateProject(ctx, "dup"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.CreateProject(ctx, "dup"); !errors.Is(err, wgerr.AlreadyExists) {
			t.Fatalf("second create: %v, want already_exists", err)
		}
	})
	t.Run("ErrInvalidName", func(t *testing.T) {
		for _, name := range []string{"", " lead", "has space", "-dash", "a/b", "0b0e8d1c-4f2a-4c55-9a56-6d1f5e2b7c11"} {
			if _, err := f.svc.CreateProject(ctx, name); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%q: %v, want invalid_argument", name, err)
			}
		}
		projects, err := f.svc.ListProjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range projects {
			if p.Name == "has space" || p.Name == "" {
				t.Fatalf("an invalid name was stored: %+v", p)
			}
		}
	})
}

func TestLabelsAcceptMixedCase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	it := f.mustItem(t, itemOpts{Labels: []string{"Backend", "team=infra", "gpu"}})
	got, err := f.svc.Item(context.Background(), f.project, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != 3 || got.Labels[0] != "Backend" || got.Labels[1] != "team=infra" {
		t.Fatalf("labels %v", got.Labels)
	}
}
