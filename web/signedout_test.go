package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/workgraph-dev/workgraph/attention"
)

// TestPostAfterSessionEnded: a form sent after its session ended changes
// nothing and leads to the sign-in form with the page it was sent from as
// where to return (the form's back field, else the Referer when it is this
// site's; another site's Referer returns to "/"). It used to lead to the
// sign-in form alone, and from there to the home page.
func TestPostAfterSessionEnded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	req, err := e.att.Hold(ctx, e.project.ID, e.mustItem("Ship it").ID, "Which region?", "token:lead")
	if err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	csrf := b.csrf
	wantStatus(t, b.post("/signout", nil), http.StatusSeeOther)
	path := "/p/acme/attention/" + req.ID.String() + "/resolve"
	for _, c := range []struct {
		name    string
		form    url.Values
		referer string
		next    string
	}{
		{"Referer", url.Values{}, b.e.srv.URL + "/p/acme/inbox?answered=x", "/p/acme/inbox?answered=x"},
		{"Back", url.Values{"back": {"/inbox"}}, b.e.srv.URL + "/p/acme/inbox", "/inbox"},
		{"ErrOtherSite", url.Values{}, "https://evil.example/p/acme/inbox", "/"},
		{"ErrNoReferer", url.Values{}, "", "/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.form.Set("answer", "eu-west-1")
			c.form.Set("csrf", csrf)
			r := b.post(path, c.form, "Referer", c.referer)
			wantStatus(t, r, http.StatusSeeOther)
			if want := "/signin?next=" + url.QueryEscape(c.next); r.Header.Get("Location") != want {
				t.Fatalf("Location %q, want %q", r.Header.Get("Location"), want)
			}
		})
	}
	if got, _ := e.att.Get(ctx, e.project.ID, req.ID); got.State != attention.StateOpen {
		t.Fatalf("a post without a session changed the request: %+v", got)
	}
}
