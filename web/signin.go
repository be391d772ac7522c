package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// signinCookie carries the double-submit token of the sign-in form, which
// has no session to derive a CSRF token from yet.
const signinCookie = "wg_signin"

func (u *ui) signinForm(r *req) error {
	if ok, err := r.loadSession(); err == nil && ok {
		return r.Redirect(http.StatusSeeOther, safeNext(r.QueryParam("next")))
	}
	return r.showSignin(http.StatusOK, r.QueryParam("next"), "")
}

// showSignin renders the form with a fresh double-submit token.
func (r *req) showSignin(status int, next, msg string) error {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	http.SetCookie(r.Response(), &http.Cookie{
		Name: signinCookie, Value: tok, Path: "/signin", HttpOnly: true,
		Secure: secureRequest(r.Request()), SameSite: http.SameSiteStrictMode, MaxAge: 3600,
	})
	return r.showStatus(status, &SigninPage{
		Layout: Layout{Title: "Sign in"}, SigninCSRF: tok, Next: safeNext(next), Error: msg,
	})
}

// signin checks the token, refuses agent tokens, starts a session and sets
// its cookie. A failed sign-in counts against the client's address
// (auth.Throttle); while the address is throttled, sign-ins are refused
// with 429 before the token is looked up, but those with a token this
// replica verified before (auth.Service.Remembers), which guesses from the
// address must not lock out.
func (u *ui) signin(r *req) error {
	next := r.FormValue("next")
	c, err := r.Cookie(signinCookie)
	if err != nil || !validCSRF(c.Value, r.FormValue(csrfField)) {
		return r.showSignin(http.StatusForbidden, next, "The sign-in form expired. Please try again.")
	}
	addr := auth.ClientAddr(r.Request())
	token := r.FormValue("token")
	if wait, blocked := u.Auth.Throttled(u.Throttle, addr, token); blocked {
		secs := int(math.Ceil(wait.Seconds()))
		r.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return r.showSignin(http.StatusTooManyRequests, next, fmt.Sprintf("Too many failed sign-ins from your address. Try again in %d s.", secs))
	}
	p, err := u.Auth.Authenticate(r.ctx(), token)
	if errors.Is(err, wgerr.Unauthenticated) {
		u.Throttle.Fail(addr)
		return r.showSignin(http.StatusUnauthorized, next, "That token is not valid (unknown or revoked).")
	}
	if err != nil {
		return err
	}
	if p.Role != auth.RoleHuman && p.Role != auth.RoleAdmin {
		return r.showSignin(http.StatusForbidden, next, "Agent tokens cannot sign in to the web UI. Use a human or admin token.")
	}
	id, expires, err := u.Sessions.Create(r.ctx(), p)
	if err != nil {
		return err
	}
	setSessionCookie(r.Response(), r.Request(), id, expires)
	http.SetCookie(r.Response(), &http.Cookie{Name: signinCookie, Path: "/signin", MaxAge: -1})
	return r.Redirect(http.StatusSeeOther, safeNext(next))
}

func (u *ui) signout(r *req) error {
	if err := u.Sessions.End(r.ctx(), r.sessID); err != nil {
		return err
	}
	setSessionCookie(r.Response(), r.Request(), "", time.Time{})
	return r.Redirect(http.StatusSeeOther, "/signin")
}

// home sends a person to their project's inbox, an admin without a
// project to the inbox across all projects.
func (u *ui) home(r *req) error {
	if pid := r.sess.Principal.ProjectID; pid != nil {
		p, err := u.Graph.Project(r.ctx(), pid.String())
		if err == nil {
			return r.Redirect(http.StatusSeeOther, "/p/"+url.PathEscape(p.Name)+"/inbox")
		}
	}
	if r.sess.Principal.IsAdmin() {
		// An admin's home is the inbox across the projects.
		return r.Redirect(http.StatusSeeOther, allInboxPath)
	}
	return r.Redirect(http.StatusSeeOther, "/projects")
}

func (u *ui) projects(r *req) error {
	all, err := u.Graph.ListProjects(r.ctx())
	if err != nil {
		return err
	}
	var mine []graph.Project
	for _, p := range all {
		if r.sess.Principal.CanSee(p.ID) {
			mine = append(mine, p)
		}
	}
	if len(mine) == 1 {
		return r.Redirect(http.StatusSeeOther, "/p/"+url.PathEscape(mine[0].Name)+"/inbox")
	}
	return r.show(&ProjectsPage{Layout: r.base("Projects", "projects"), Projects: mine})
}

func (u *ui) projectHome(r *req) error {
	return r.Redirect(http.StatusSeeOther, r.projectURL("/inbox"))
}

// live answers the counters app.js refreshes.
func (u *ui) live(r *req) error {
	attention, leases := r.counts()
	return r.JSON(http.StatusOK, map[string]int{"attention": attention, "leases": leases})
}

// safeNext keeps a post-sign-in redirect on this site: it returns next only
// when a browser would read it as a path of this origin, else "/".
//
// Browsers drop ASCII tab, LF and CR anywhere in a URL and read a backslash
// as a slash, so "/\t/evil.example" and "/\evil.example" mean
// "//evil.example", another host. Rather than mimic every such rule, next
// may hold printable ASCII only (our own links percent-encode everything
// else) and no backslash; it must then parse with no scheme, no host and no
// user, and its path must start with exactly one "/".
func safeNext(next string) string {
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	return next
}
