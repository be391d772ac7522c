package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestItemsEmptyStates: the items page says why it shows no item. A
// project without items says so and how to add one, on the board and in
// the list; filters that match nothing say so, with the way back to every
// item, on the board too. The board showed six empty columns and nothing
// else in both cases, and the list said "No items match." in a project
// that had none.
func TestItemsEmptyStates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	const none, nomatch = "No items yet", "No items match these filters"

	t.Run("NoItems", func(t *testing.T) {
		for _, path := range []string{"/p/acme/items", "/p/acme/items?view=list"} {
			r := b.get(path)
			wantStatus(t, r, http.StatusOK)
			wantBody(t, r, none, `href="/p/acme/items/new"`, "workgraph items add")
			if strings.Contains(r.body, nomatch) || strings.Contains(r.body, "No items match.") {
				t.Errorf("%s: a project without items says no item matches", path)
			}
		}
	})
	e.mustItem("Write the migration")
	t.Run("NoMatch", func(t *testing.T) {
		for _, path := range []string{"/p/acme/items?q=nothing-like-this", "/p/acme/items?view=list&q=nothing-like-this", "/p/acme/items?label=absent"} {
			r := b.get(path)
			wantStatus(t, r, http.StatusOK)
			wantBody(t, r, nomatch)
			if strings.Contains(r.body, none) {
				t.Errorf("%s: a project with items says it has none", path)
			}
		}
	})
	t.Run("Items", func(t *testing.T) {
		for _, path := range []string{"/p/acme/items", "/p/acme/items?view=list", "/p/acme/items?q=migration"} {
			r := b.get(path)
			wantStatus(t, r, http.StatusOK)
			wantBody(t, r, "Write the migration")
			if strings.Contains(r.body, none) || strings.Contains(r.body, nomatch) {
				t.Errorf("%s: a page that shows an item says it shows none", path)
			}
		}
	})
}
