package web_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/workgraph-dev/workgraph/lease"
)

// itemFilterRE is the history's item filter: an input named item, its
// type and value.
var itemFilterRE = regexp.MustCompile(`<input type="([a-z]+)" [^>]*name="item" value="([^"]*)"`)

// TestHistoryShowsItsItemFilter: the lease history narrowed to one item
// (the item page's History button, ?item=) shows that filter in its form,
// as a field a person can read, change or empty like the worker's, not as
// a hidden input under a page that reads "every lease ever granted"; and
// the form offers the field when no item is chosen.
func TestHistoryShowsItsItemFilter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("filtered")
	e.mustItem("other")
	if _, err := e.leases.Claim(context.Background(), e.project.ID, lease.ClaimRequest{Worker: "w"}); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	prefix := it.ID.String()[:8]
	for path, want := range map[string]string{"/p/acme/leases?item=" + prefix: prefix, "/p/acme/leases": ""} {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		m := itemFilterRE.FindAllStringSubmatch(r.body, -1)
		if len(m) != 1 || m[0][1] != "text" || m[0][2] != want {
			t.Errorf("%s: item filter %q, want one text field holding %q", path, m, want)
		}
	}
}
