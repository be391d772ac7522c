package web

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/session"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Deps are the services the UI is built on.
type Deps struct {
	// Sessions stores the sign-in sessions.
	Sessions *session.Store
	Auth     *auth.Service
	// Throttle counts failed sign-ins per client address (shared with the
	// API); nil: one with auth.NewThrottle's defaults.
	Throttle *auth.Throttle
	// Bodies is the replica's budget of request bodies in memory at once
	// (shared with the API); nil: one of the UI's own with bodygate's
	// defaults. A form takes room in it before it is read.
	Bodies    *bodygate.Gate
	Graph     *graph.Service
	Leases    *lease.Service
	Attention *attention.Service
	// Webhooks lists a project's webhooks and their deliveries (nil: no
	// webhooks page); Links serves answer links (nil: none).
	Webhooks *webhook.Service
	Links    *webhook.AnswerLinks
	// Events reads the event log for the pages' live updates; nil: pages
	// do not update by themselves.
	Events *events.Reader
	// EventsHeartbeat is how often an idle page stream sends a comment
	// (0: DefaultPageBeat).
	EventsHeartbeat time.Duration
	// EventsStall is how long a write to a page stream's reader may wait
	// (its connection's buffers full: it stopped reading) before the
	// stream is dropped (0: two heartbeats).
	EventsStall time.Duration
	// Metrics counts the pages' event streams open now (as the API's are
	// counted); nil counts nothing.
	Metrics *metrics.Metrics
	// Clock is the domain clock; nil means the database's. The UI also uses
	// it for "waited for" and "expires in" when it is set (a stub).
	Clock clock.Clock
	// Local is the process clock those durations are shown against when
	// Clock is the database's; nil: the system clock.
	Local  clock.Local
	Logger *slog.Logger
	// Drawings lays out graph pictures; nil means NewDrawings with the default limits.
	Drawings *Drawings
	// CSVMaxRows bounds the leases of one CSV export of the history (0:
	// DefaultCSVMaxRows).
	CSVMaxRows int
	// LiveRefresh is how often a page's live region (the workers page's
	// live leases) is fetched again by the browser (0:
	// DefaultLiveRefresh).
	LiveRefresh time.Duration
}

// DefaultLiveRefresh is Deps.LiveRefresh's default.
const DefaultLiveRefresh = 5 * time.Second

// ui serves the pages.
type ui struct {
	Deps
	// forms bounds the part of Bodies the UI's forms hold at once (a
	// quarter of it): a form takes room before its session is known, so
	// a visitor without credentials stalling many forms would otherwise
	// hold the whole budget and keep the API's workers out (a heartbeat
	// refused until the stalled bodies time out).
	forms *bodygate.Gate
	// perClient bounds the part of forms one client address
	// (auth.ClientAddr) holds at once (a quarter of it): a visitor
	// stalling many forms would otherwise hold the whole share and keep
	// everyone's forms, sign-in included, out.
	perClient *bodygate.PerClient
}

// formsShare is the part of the replica's budget of bodies (Deps.Bodies)
// the UI's forms may hold at once: 1/formsShare of it.
const formsShare = 4

// clientShare is the part of the forms' share one client address may
// hold at once: 1/clientShare of it. A quarter is the smallest such part
// that still holds the largest form (maxFormBytes) at the default budget
// (64 MiB: forms 16, one address 4 MiB), so a person is never refused on
// account of their own form's size; one address then leaves three
// quarters of the share to everyone else (a smaller budget: a form over
// an address's part counts as that part, so it passes alone).
const clientShare = 4

// enterBodies takes room for a form of size bytes sent by client: in the
// client's part of the forms' share of the budget of bodies, in that
// share, then in the budget itself, and returns what gives all three
// back. Errors: as bodygate.Gate.Enter.
func (u *ui) enterBodies(ctx context.Context, client string, size int64) (func(), error) {
	releaseClient, err := u.perClient.Enter(ctx, client, size)
	if err != nil {
		return nil, err
	}
	releaseShare, err := u.forms.Enter(ctx, size)
	if err != nil {
		releaseClient()
		return nil, err
	}
	release, err := u.Bodies.Enter(ctx, size)
	if err != nil {
		releaseShare()
		releaseClient()
		return nil, err
	}
	return func() { release(); releaseShare(); releaseClient() }, nil
}

// Mount registers the UI's routes on e: "/" and the pages below it, plus
// /static/. It does not touch /v1, /healthz or /readyz.
func Mount(e *echo.Echo, d Deps) {
	if d.Clock == nil {
		d.Clock = clock.Database{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Throttle == nil {
		d.Throttle = auth.NewThrottle(0, 0, d.Logger)
	}
	if d.Bodies == nil {
		d.Bodies = bodygate.New(0, 0)
	}
	if d.Drawings == nil {
		d.Drawings = NewDrawings(DrawLimits{})
	}
	if d.Drawings.logger == nil {
		d.Drawings.logger = d.Logger
	}
	if d.CSVMaxRows <= 0 {
		d.CSVMaxRows = DefaultCSVMaxRows
	}
	if d.LiveRefresh <= 0 {
		d.LiveRefresh = DefaultLiveRefresh
	}
	forms := bodygate.New(max(d.Bodies.Capacity()/formsShare, 1), d.Bodies.Wait())
	u := &ui{Deps: d, forms: forms,
		perClient: bodygate.NewPerClient("forms from one address", max(forms.Capacity()/clientShare, 1), forms.Wait())}

	static, _ := fs.Sub(staticFS, "static")
	fileServer := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	e.GET("/static/*", func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if c.QueryParam("v") == assetVersion {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		fileServer.ServeHTTP(c.Response(), c.Request())
		return nil
	})

	e.GET("/signin", u.open(u.signinForm))
	e.POST("/signin", u.open(u.signin))
	e.POST("/signout", u.action(u.signout))
	e.GET("/", u.page(u.home))
	e.GET("/projects", u.page(u.projects))
	e.GET(allInboxPath, u.page(u.allInbox))
	e.GET(allEventsPath, u.page(u.allEventStream))

	p := func(path string) string { return "/p/:project" + path }
	e.GET(p(""), u.project(u.projectHome))
	e.GET(p("/live"), u.project(u.live))
	e.GET(p("/events/stream"), u.project(u.eventStream))
	e.GET(p("/inbox"), u.project(u.inbox))
	e.POST(p("/attention/:id/resolve"), u.projectAction(u.resolve))
	e.POST(p("/attention/:id/dismiss"), u.projectAction(u.dismiss))
	e.GET(p("/attention/:id/context"), u.project(u.attentionContext))
	e.GET(p("/items"), u.project(u.items))
	e.GET(p("/items/new"), u.project(u.newItemForm))
	e.POST(p("/items"), u.projectAction(u.createItem))
	e.GET(itemRoute, u.project(u.byShortID(u.item)))
	e.GET(itemRoute+"/edit", u.project(u.byShortID(u.editItemForm)))
	e.POST(p("/items/:id/edit"), u.projectAction(u.editItem))
	e.POST(p("/items/:id/cancel"), u.projectAction(u.cancelItem))
	e.POST(p("/items/:id/hold"), u.projectAction(u.holdItem))
	e.POST(p("/items/:id/budget"), u.projectAction(u.setBudget))
	e.POST(p("/items/:id/dependencies"), u.projectAction(u.addDependency))
	e.POST(p("/items/:id/dependencies/:dep/remove"), u.projectAction(u.removeDependency))
	e.GET(itemRoute+"/graph", u.project(u.byShortID(u.itemGraph)))
	e.GET(p("/items/:id/result"), u.project(u.itemResult))
	e.GET(p("/graph"), u.project(u.projectGraph))
	e.GET(p("/leases"), u.project(u.leases))
	e.GET(p("/leases.csv"), u.project(u.leasesCSV))
	e.GET(p("/workers"), u.project(u.workers))
	e.POST(p("/leases/:id/stop"), u.projectAction(u.requestStop))
	e.GET(p("/webhooks"), u.project(u.webhooksPage))
	e.GET(p("/webhooks/:id"), u.project(u.webhookPage))
	e.POST(p("/webhooks"), u.projectAction(u.createWebhook))
	e.POST(p("/webhooks/:id/enable"), u.projectAction(u.enableWebhook))
	e.POST(p("/webhooks/:id/secret"), u.projectAction(u.rotateWebhookSecret))
	e.POST(p("/webhooks/:id/delete"), u.projectAction(u.deleteWebhook))
	e.GET("/answer/:project/:token", u.open(u.answerLink))
	e.POST("/answer/:project/:token", u.open(u.answerLink))

	// Unknown pages get an HTML answer; unknown API paths keep the API's
	// problem+json (its error handler answers echo.ErrNotFound).
	e.RouteNotFound("/*", func(c echo.Context) error {
		if isAPIPath(c.Request().URL.Path) {
			return echo.ErrNotFound
		}
		r := &req{Context: c, ui: u}
		securityHeaders(c.Response().Header())
		ok, err := r.loadSession()
		if err != nil {
			return r.error(err)
		}
		if ok {
			r.project = u.visibleProject(r, c.Request().URL.Path)
		}
		return r.fail(http.StatusNotFound, "Not found", "There is no such page.")
	})
	e.HTTPErrorHandler = u.errorHandler(e.HTTPErrorHandler)
}

// errorHandler shows an error of the project's kind (a *wgerr.Error) that
// reached Echo on a page's path as an error page with its status: one a
// middleware that runs before any page returned (the server's bound on a
// request's headers). The API's paths, Echo's own errors and an answer
// already begun go to next.
func (u *ui) errorHandler(next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		var we *wgerr.Error
		if isAPIPath(c.Request().URL.Path) || !errors.As(err, &we) || c.Response().Committed {
			next(err, c)
			return
		}
		r := &req{Context: c, ui: u}
		securityHeaders(c.Response().Header())
		if err := r.error(err); err != nil && !c.Response().Committed {
			next(err, c)
		}
	}
}

// visibleProject is the project an unknown address below /p/{project}/
// names, when the signed-in principal may see it, so that its not-found
// page keeps the project's navigation and leads back to it; else the zero
// Project (the page says no more about a project the person may not see).
func (u *ui) visibleProject(r *req, path string) graph.Project {
	rest, ok := strings.CutPrefix(path, "/p/")
	if !ok {
		return graph.Project{}
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "" {
		return graph.Project{}
	}
	p, err := u.Graph.Project(r.ctx(), name)
	if err != nil || !r.sess.Principal.CanSee(p.ID) {
		return graph.Project{}
	}
	return p
}

func isAPIPath(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }

// req is one request to the UI: the echo context, the signed-in session
// and, below /p/:project, the project.
type req struct {
	echo.Context
	ui      *ui
	sess    *signedIn
	sessID  string
	project graph.Project
}

func (r *req) ctx() context.Context { return r.Request().Context() }

// now is the instant the UI displays against: the stub clock in tests, the
// process clock (Deps.Local) otherwise. Nothing the UI decides depends on it.
func (r *req) now() time.Time {
	if t := r.ui.Clock.Now(); t != nil {
		return *t
	}
	return r.ui.Local.Read()
}

// by is the principal recorded for the person's actions.
func (r *req) by() string { return r.sess.Principal.String() }

// base is the Layout every page embeds.
func (r *req) base(title, nav string) Layout {
	l := Layout{Title: title, Nav: nav, Session: r.sess, Now: r.now()}
	if r.project.Name != "" {
		p := r.project
		l.Project = &p
		l.OpenAttention, l.ActiveLeases = r.counts()
		l.DisabledWebhooks = r.disabledHooks()
		l.WebhooksLink = r.mayManageHooks()
	}
	l.Flash, l.FlashError = r.takeFlash()
	return l
}

// counts are the project's open attention requests and active leases, for
// the navigation badges. A failed count shows as 0 rather than failing the
// page.
func (r *req) counts() (attention, leases int) {
	if n, err := r.ui.Attention.CountOpen(r.ctx(), r.project.ID); err == nil {
		attention = n
	}
	if n, err := r.ui.Leases.CountActive(r.ctx(), r.project.ID); err == nil {
		leases = n
	}
	return attention, leases
}

type handlerFunc func(r *req) error

// open wraps a handler that needs no session (sign-in).
func (u *ui) open(fn handlerFunc) echo.HandlerFunc {
	return u.wrap(fn, false, false)
}

// page wraps a GET handler that needs a session.
func (u *ui) page(fn handlerFunc) echo.HandlerFunc { return u.wrap(fn, true, false) }

// action wraps a POST handler that needs a session and its CSRF token.
func (u *ui) action(fn handlerFunc) echo.HandlerFunc { return u.wrap(fn, true, false) }

// project wraps a handler below /p/:project.
func (u *ui) project(fn handlerFunc) echo.HandlerFunc { return u.wrap(fn, true, true) }

// projectAction wraps a POST handler below /p/:project.
func (u *ui) projectAction(fn handlerFunc) echo.HandlerFunc { return u.wrap(fn, true, true) }

// wrap applies, in order: security headers; for POSTs the same-origin
// check (before anything else is looked at); the body's kind and size
// (boundBody); for POSTs room in the replica's budget of bodies, within the
// forms' share of it and the client address's part of that (enterBodies,
// held until the handler returns); the one check of the text the request
// carries (checkInput); the session (signing in when
// missing); for POSTs the CSRF token; the project (404 when the principal
// may not see it); then the handler, whose errors become error pages.
func (u *ui) wrap(fn handlerFunc, needSession, needProject bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := &req{Context: c, ui: u}
		securityHeaders(c.Response().Header())
		post := c.Request().Method == http.MethodPost
		if post && !sameOrigin(c.Request()) {
			return r.fail(http.StatusForbidden, "Cross-site request refused",
				"This form was posted from another site. Nothing was changed.")
		}
		if status, msg := boundBody(c); status != 0 {
			return r.fail(status, "Form refused", msg)
		}
		if post {
			release, err := u.enterBodies(c.Request().Context(), auth.ClientAddr(c.Request()), formSize(c.Request()))
			if err != nil {
				return r.formNotRead(err)
			}
			defer release()
		}
		if err := checkInput(c); err != nil {
			return r.error(err)
		}
		if needSession {
			ok, err := r.loadSession()
			if err != nil {
				return r.error(err)
			}
			if !ok {
				if post {
					// The session ended (signed out in another tab,
					// expired): nothing is done. After signing in the
					// person returns to the page the form was on, where
					// app.js puts back an answer they had typed, and is
					// told that it was not sent.
					r.setFlash("Your session had ended, so nothing was sent. Check the form and send it again.", true)
					return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(r.formPage()))
				}
				return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			if post && !validCSRF(r.sess.CSRF, c.FormValue(csrfField)) {
				return r.fail(http.StatusForbidden, "Form expired",
					"The form's security token did not match your session. Reload the page and try again.")
			}
		}
		if needProject {
			p, err := u.Graph.Project(r.ctx(), c.Param("project"))
			if err != nil || !r.sess.Principal.CanSee(p.ID) {
				return r.fail(http.StatusNotFound, "Not found", "There is no such project, or it is not yours.")
			}
			r.project = p
		}
		if err := fn(r); err != nil {
			return r.error(err)
		}
		return nil
	}
}

// formNotRead shows the page for a post refused by the replica's budget
// of bodies (Bodies): its form was not read, so nothing changed, and the
// way back is to the page the form was on (the Referer: the form itself
// may not be read), where app.js puts back an answer the person had typed.
// A refusal other than rate_limited (the request ended while waiting) is
// an error page as any.
func (r *req) formNotRead(err error) error {
	if code, _ := wgerr.HTTPStatus(err); code != wgerr.CodeRateLimited {
		return r.error(err)
	}
	r.Response().Header().Set("Retry-After", "1")
	heading := "Server busy"
	return r.showStatus(http.StatusTooManyRequests, &ErrorPage{
		Layout:  Layout{Title: heading},
		Heading: heading,
		Message: "The server is reading many other requests at the moment, so this form was not read and nothing was changed. Go back and send it again in a moment.",
		Back:    r.refererPage(),
	})
}

// formPage is the page of this site a post's form was on, to return to
// after signing in: the form's "back" field, else refererPage.
func (r *req) formPage() string {
	if b := r.backTo(""); b != "" {
		return b
	}
	return r.refererPage()
}

// refererPage is the Referer when it is a page of this site (pages send it
// to their own origin only), else "/".
func (r *req) refererPage() string {
	ref, err := url.Parse(r.Request().Referer())
	if err != nil || ref.Host != r.Request().Host || ref.Path == "" {
		return "/"
	}
	return safeNext(ref.RequestURI())
}

// maxFormBytes bounds the body of every request to the UI. The largest
// form is an item's, whose body (graph.MaxBodyBytes) URL-encoded takes up
// to three bytes a byte; the other fields are small.
const maxFormBytes = 3*graph.MaxBodyBytes + 64<<10

// boundBody refuses, before any of it is read, a body that is not a
// URL-encoded form (415: every form of the UI is one; Go would parse a
// multipart body into memory and temporary files on any route, before the
// session is known) or is longer than maxFormBytes (413), and makes the
// read of a body without a length stop there. It answers the status and
// message of the refusal, or 0.
func boundBody(c echo.Context) (int, string) {
	req := c.Request()
	if req.Body == nil || req.Body == http.NoBody {
		return 0, ""
	}
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/x-www-form-urlencoded" {
			return http.StatusUnsupportedMediaType, "The UI takes forms as application/x-www-form-urlencoded only."
		}
	}
	if req.ContentLength > maxFormBytes {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than %d bytes.", maxFormBytes)
	}
	req.Body = http.MaxBytesReader(c.Response().Writer, req.Body, maxFormBytes)
	return 0, ""
}

// formSize is the room a POST's form takes in the budget of bodies: its
// Content-Length, maxFormBytes when it has none, 0 without a body.
func formSize(req *http.Request) int64 {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return 0
	case req.ContentLength < 0:
		return maxFormBytes
	}
	return req.ContentLength
}

// checkInput refuses (400) a request whose path parameters, query or form
// values are not valid UTF-8 or hold NUL, which PostgreSQL's text refuses:
// checked once here, so no handler passes them on.
func checkInput(c echo.Context) error {
	for i, name := range c.ParamNames() {
		if i < len(c.ParamValues()) {
			if err := input.Text(name, c.ParamValues()[i]); err != nil {
				return err
			}
		}
	}
	values, err := c.FormParams() // the query, and a POST's form
	var tooLong *http.MaxBytesError
	if errors.As(err, &tooLong) {
		return wgerr.New(wgerr.CodePayloadTooLarge, "The form is larger than %d bytes.", tooLong.Limit)
	}
	if err != nil {
		values = c.QueryParams()
	}
	return input.Values(values)
}

// loadSession reads the session cookie. A request carrying more than one
// (a cookie of the same name set for a parent domain or another path, by
// another site of the domain) is refused with 400 rather than signed in as
// whichever comes first.
func (r *req) loadSession() (bool, error) {
	id, ok, err := sessionCookieOf(r.Request())
	if err != nil || !ok {
		return false, err
	}
	s, ok, err := r.ui.Sessions.Lookup(r.ctx(), id)
	if err != nil || !ok {
		return false, err
	}
	r.sess, r.sessID = &signedIn{Session: s, CSRF: csrfToken(id)}, id
	// The actor of the page's changes, for the event log.
	r.SetRequest(r.Request().WithContext(events.WithActor(r.ctx(), s.Principal.String())))
	return true, nil
}

// securityHeaders: no framing, no sniffing, no inline script or style, no
// form posts elsewhere; pages are private and not cached.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// Page is anything that renders itself as a full HTML page.
type Page interface {
	Render(w http.ResponseWriter) error
}

// show renders a page with status 200.
func (r *req) show(p Page) error { return r.showStatus(http.StatusOK, p) }

func (r *req) showStatus(status int, p Page) error {
	r.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
	r.Response().WriteHeader(status)
	return p.Render(r.Response())
}

// fail shows an error page.
func (r *req) fail(status int, heading, message string) error {
	return r.failWithLinks(status, heading, message, nil)
}

// failWithLinks shows an error page that lists the pages the person may
// have meant.
func (r *req) failWithLinks(status int, heading, message string, links []Link) error {
	p := &ErrorPage{Layout: Layout{Title: heading, Session: r.sess}, Heading: heading, Message: message, Links: links, Back: "/"}
	if r.project.Name != "" {
		// Inside a project: its navigation with its counters (not when the
		// database is down: counting would only wait for it too), and the
		// way back to the project.
		if status == http.StatusServiceUnavailable {
			pr := r.project
			p.Project = &pr
		} else {
			p.Layout = r.base(heading, "")
		}
		p.Back = r.projectURL("")
	}
	return r.showStatus(status, p)
}

// error shows the page for an error returned by a handler or service, with
// the status the API answers it with (wgerr.HTTPStatus). Only an internal
// error is logged as a failure; its cause is never shown.
func (r *req) error(err error) error {
	code, status := wgerr.HTTPStatus(err)
	var msg string
	var we *wgerr.Error
	if errors.As(err, &we) {
		msg = we.Message
	}
	if msg == "" {
		msg = wgerr.Title(code) + "."
	}
	if wgerr.RetryLater(code) && r.Response().Header().Get("Retry-After") == "" {
		r.Response().Header().Set("Retry-After", "1")
	}
	switch status {
	case http.StatusNotFound:
		return r.fail(status, "Not found", msg)
	case http.StatusForbidden, http.StatusUnauthorized:
		return r.fail(status, "Not allowed", msg)
	case http.StatusTooManyRequests:
		return r.fail(status, "Slow down", msg+" Try again in a moment.")
	case http.StatusServiceUnavailable:
		r.ui.Logger.WarnContext(r.Request().Context(), "web: database unavailable", "path", r.Request().URL.Path, "err", err, "cause", errors.Unwrap(err))
		return r.fail(status, "Try again in a moment", "The database is not reachable right now.")
	case http.StatusInternalServerError:
		r.ui.Logger.ErrorContext(r.Request().Context(), "web: request failed", "path", r.Request().URL.Path, "err", err, "cause", errors.Unwrap(err))
		return r.fail(status, "Something went wrong", "The server could not complete this request. It has been logged.")
	}
	return r.fail(status, "That did not work", msg)
}

// redirect answers a POST with 303 See Other to target, carrying a one-time
// message for the next page.
func (r *req) redirect(target, flash string) error {
	if flash != "" {
		r.setFlash(flash, false)
	}
	return r.Redirect(http.StatusSeeOther, target)
}

const flashCookie = "wg_flash"

func (r *req) setFlash(msg string, isError bool) {
	v := "i"
	if isError {
		v = "e"
	}
	http.SetCookie(r.Response(), &http.Cookie{
		Name: flashCookie, Value: v + base64.RawURLEncoding.EncodeToString([]byte(msg)),
		Path: "/", HttpOnly: true, Secure: secureRequest(r.Request()), SameSite: http.SameSiteLaxMode, MaxAge: 60,
	})
}

// takeFlash reads and clears the one-time message.
func (r *req) takeFlash() (string, bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil || len(c.Value) < 2 {
		return "", false
	}
	http.SetCookie(r.Response(), &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true})
	b, err := base64.RawURLEncoding.DecodeString(c.Value[1:])
	if err != nil {
		return "", false
	}
	return string(b), c.Value[0] == 'e'
}

// projectURL is a path below the current project.
func (r *req) projectURL(path string) string {
	return "/p/" + url.PathEscape(r.project.Name) + path
}
