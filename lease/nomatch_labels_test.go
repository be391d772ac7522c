package lease_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestNoMatchNamesWhatTheLabelledItemsMiss: a claim for a label whose
// ready items it could take but for their requires answers no_match
// naming what those items require beyond its capabilities, not what the
// other labels' items require (21 of them, which would fill the list of 20
// and leave out the one that matters); so does a batch claim. A claim for
// a label no ready item carries names what the ready items require.
func TestNoMatchNamesWhatTheLabelledItemsMiss(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.item(t, graph.NewItem{Title: "render", Labels: []string{"video"}, Requires: []string{"zgpu", "read"}})
	for i := range 21 {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("other %d", i), Labels: []string{"docs"}, Requires: []string{fmt.Sprintf("a%02d", i)}})
	}
	missing := func(t *testing.T, err error) []string {
		t.Helper()
		var we *wgerr.Error
		if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
			t.Fatalf("claim: %v, want no_match", err)
		}
		return we.Details["missing"].([]string)
	}
	req := lease.ClaimRequest{Worker: "w", Labels: []string{"video"}, Capabilities: []string{"read"}}
	t.Run("OK", func(t *testing.T) {
		_, err := f.leases.Claim(f.ctx, f.project, req)
		if got := missing(t, err); !slices.Equal(got, []string{"zgpu"}) {
			t.Fatalf("missing = %v, want [zgpu] (what the video item requires beyond read)", got)
		}
	})
	t.Run("OKBatch", func(t *testing.T) {
		_, err := f.leases.ClaimBatch(f.ctx, f.project, req, 4)
		if got := missing(t, err); !slices.Equal(got, []string{"zgpu"}) {
			t.Fatalf("batch: missing = %v, want [zgpu]", got)
		}
	})
	t.Run("NoItemCarriesTheLabel", func(t *testing.T) {
		_, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"audio"}, Capabilities: []string{"read"}})
		if got := missing(t, err); len(got) != 20 || got[0] != "a00" {
			t.Fatalf("missing = %v, want the first 20 of the ready items' requires", got)
		}
	})
}
