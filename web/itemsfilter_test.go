package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestItemsBadFilter: a filter the board cannot apply (a malformed parent,
// an unknown one, a sort it does not know, a cursor of nothing) answers
// the items page with its form, the filter as typed and what is wrong,
// with the API's status for the same refusal. It answered an error page
// of its own, and the form with what was typed was gone.
func TestItemsBadFilter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	for _, c := range []struct {
		name, query string
		status      int
		says        string
	}{
		{"ErrParentMalformed", "?parent=zz", http.StatusBadRequest, "parent: must be an item id"},
		{"ErrParentUnknown", "?parent=" + uuid.NewString(), http.StatusNotFound, "not found"},
		{"ErrSort", "?view=list&sort=bogus", http.StatusBadRequest, "sort"},
		{"ErrCursor", "?view=list&cursor=zzz", http.StatusBadRequest, "cursor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := b.get("/p/acme/items" + c.query)
			wantStatus(t, r, c.status)
			wantBody(t, r, `id="items-error"`, c.says, `<form class="filters"`, `name="parent"`)
			if strings.Contains(r.body, `id="items-empty"`) {
				t.Errorf("the page says the project is empty or nothing matched beside the refusal:\n%s", r.body)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		r := b.get("/p/acme/items?view=list&sort=-priority")
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(r.body, `id="items-error"`) {
			t.Fatalf("a valid filter shows an error:\n%s", r.body)
		}
	})
}
