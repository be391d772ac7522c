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

// TestTwoSessionCookies: a request carrying two session cookies (one set
// for a parent domain or another path by another site of the domain) is
// refused with 400 and signs in as neither: which one is the person's
// would be a guess. It used to sign in as whichever came first.
func TestTwoSessionCookies(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mine, other := e.signIn(e.human), e.signIn(e.admin)
	cookie := func(b *browser) *http.Cookie {
		u, _ := url.Parse(e.srv.URL)
		for _, c := range b.c.Jar.Cookies(u) {
			if c.Name == "wg_session" {
				return c
			}
		}
		t.Fatal("no session cookie after signing in")
		return nil
	}
	for name, pair := range map[string][2]*http.Cookie{
		"Two":      {cookie(mine), cookie(other)},
		"Same":     {cookie(mine), cookie(mine)},
		"OneStale": {{Name: "wg_session", Value: "stale"}, cookie(mine)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"/p/acme/inbox", "/p/acme/nothing-here"} {
				req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
				req.AddCookie(pair[0])
				req.AddCookie(pair[1])
				r := e.browser().do(req)
				wantStatus(t, r, http.StatusBadRequest)
				wantBody(t, r, "session cookies")
			}
		})
	}
	t.Run("OneOK", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/p/acme/inbox", nil)
		req.AddCookie(cookie(mine))
		wantStatus(t, e.browser().do(req), http.StatusOK)
	})
}
