package web_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestPriorityOutOfRange: a priority that is a whole number beyond what a
// priority holds (a 32-bit integer) is refused saying so, with its
// bounds, not as if it were no number at all; and a priority typed with a
// space at either end is read. Nothing is created by a refused form.
func TestPriorityOutOfRange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	b.get("/p/acme/items/new")
	for _, p := range []string{"3000000000", "-2147483649"} {
		r := b.post("/p/acme/items", url.Values{"title": {"Too eager"}, "priority": {p}})
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, "The priority must be between -2147483648 and 2147483647 (higher goes first).")
	}
	r := b.post("/p/acme/items", url.Values{"title": {"Not a number"}, "priority": {"soon"}})
	wantStatus(t, r, http.StatusBadRequest)
	wantBody(t, r, "The priority must be a whole number (higher goes first).")
	if n := itemCount(t, e, "Too eager") + itemCount(t, e, "Not a number"); n != 0 {
		t.Fatalf("refused forms created %d items", n)
	}
	r = b.post("/p/acme/items", url.Values{"title": {"Spaced"}, "priority": {" 2147483647 "}})
	wantStatus(t, r, http.StatusSeeOther)
	if n := itemCount(t, e, "Spaced"); n != 1 {
		t.Fatalf("a priority with spaces around it: %d items created, want 1", n)
	}
}
