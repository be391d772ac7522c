package graph

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestLookupIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// setIDs gives two fresh items ids that share their first 8 digits.
	setIDs := func(t *testing.T, f fixture) (a, b Item) {
		a, b = f.mustItem(t, itemOpts{Title: "first"}), f.mustItem(t, itemOpts{Title: "second"})
		f.exec(t, `UPDATE items SET id = $1 WHERE project_id = $2 AND id = $3`,
			uuid.MustParse("abcd1234-0000-4000-8000-000000000001"), f.project, a.ID)
		f.exec(t, `UPDATE items SET id = $1 WHERE project_id = $2 AND id = $3`,
			uuid.MustParse("abcd1234-9999-4000-8000-000000000002"), f.project, b.ID)
		return f.mustGet(t, uuid.MustParse("abcd1234-0000-4000-8000-000000000001")),
			f.mustGet(t, uuid.MustParse("abcd1234-9999-4000-8000-000000000002"))
	}

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := setIDs(t, f)
		for _, prefix := range []string{"abcd12340", "ABCD1234-0", "abcd1234-0000-4000-8000-000000000001"} {
			got, err := f.svc.LookupIDs(ctx, f.project, prefix, nil)
			if err != nil {
				t.Fatalf("LookupIDs(%q): %v", prefix, err)
			}
			if len(got) != 1 || got[0].ID != a.ID || got[0].Kind != KindItem || got[0].Label != "first" {
				t.Fatalf("LookupIDs(%q) = %+v, want the item %q", prefix, got, a.Title)
			}
		}
		got, err := f.svc.LookupIDs(ctx, f.project, "abcd1234-9", []IDKind{KindItem})
		if err != nil || len(got) != 1 || got[0].ID != b.ID {
			t.Fatalf("LookupIDs(abcd1234-9) = %+v, %v; want %s", got, err, b.ID)
		}
	})

	t.Run("Ambiguous", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := setIDs(t, f)
		got, err := f.svc.LookupIDs(ctx, f.project, "abcd1234", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID {
			t.Fatalf("LookupIDs(abcd1234) = %+v, want both items in id order", got)
		}
	})

	t.Run("OtherKindOrProject", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		setIDs(t, f)
		if got, err := f.svc.LookupIDs(ctx, f.project, "abcd1234", []IDKind{KindLease, KindAttention, KindToken}); err != nil || len(got) != 0 {
			t.Fatalf("LookupIDs of other kinds = %+v, %v; want none", got, err)
		}
		other, err := f.svc.CreateProject(ctx, "lookup-other-"+uuid.NewString()[:8])
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.svc.LookupIDs(ctx, other.ID, "abcd1234", nil); err != nil || len(got) != 0 {
			t.Fatalf("LookupIDs in another project = %+v, %v; want none", got, err)
		}
	})

	t.Run("ErrInvalidPrefix", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for _, prefix := range []string{"", "abc", "xyz12345", "abcd1234-0000-4000-8000-0000000000011"} {
			_, err := f.svc.LookupIDs(ctx, f.project, prefix, nil)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "prefix" {
				t.Errorf("LookupIDs(%q) = %v, want invalid_argument on prefix", prefix, err)
			}
		}
		if _, err := f.svc.LookupIDs(ctx, f.project, "abcd", []IDKind{"project"}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("LookupIDs(kind project) = %v, want invalid_argument", err)
		}
	})
}
