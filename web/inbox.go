package web

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	wgpage "github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// inboxLimit is how many open requests the inbox shows at once.
const inboxLimit = 50

// InboxPage is a person's home: the project's open attention requests,
// overdue ones first, then oldest first, each with what is needed to
// answer it.
type InboxPage struct {
	Layout
	Entries []InboxEntry
	// Next is the cursor of the page after this one ("": this is the
	// last); Paged says this is not the first page. OverdueShown counts
	// the overdue requests among Entries.
	Next  string
	Paged bool
	// After is this page's own cursor ("" on the first page): the forms
	// of its requests carry it, so an answer comes back to this page.
	After        string
	OverdueShown int
	// Open is how many requests are open in the projects the page lists.
	Open int
	// Answered is the request just answered or dismissed, with its item's
	// state after the answer.
	Answered *AnsweredNote
	// AllProjects is set on an admin's inbox across projects (/inbox).
	AllProjects *AllProjects
}

// InboxEntry is one open request and its item's context.
type InboxEntry struct {
	// Project is the request's project (named on each entry of the
	// all-projects inbox; the links and forms of every entry use it).
	Project      graph.Project
	Request      attention.Request
	Item         graph.Item
	Waited       time.Duration
	Dependencies []graph.ItemRef
	LastLease    *lease.Lease
	// LateReports, for an uncertain_outcome request: what the expired
	// attempt reported after it lost its lease (refused, kept).
	LateReports []lease.Observation
	// LateReportsNext is the cursor of the late reports after those shown
	// (a page of them, lease.Service.Observations), "" when they are all.
	LateReportsNext string
	// BudgetForm, for a budget_exhausted request: raising the budget is
	// its answer.
	BudgetForm *BudgetForm
	// BodyShown is as much of the item's description as the entry shows
	// (its first inboxBodyBytes), BodyCut set when that is not all of it:
	// the entry then links to the item's page.
	BodyShown string
	BodyCut   bool
	// asker is the worker of the lease that asked the request (inboxEntry).
	asker string
	// HTML is the entry as the page shows it (InboxPage.fit renders it
	// with page, the page it is on).
	HTML template.HTML
	page *InboxPage
}

// Page is the page the entry is on (its template reads the page's time,
// session and cursor).
func (e InboxEntry) Page() *InboxPage { return e.page }

// Asker is the worker whose lease asked the request, the item's last
// lease or an earlier one ("" for a request no lease opened: a person's
// hold, the system).
func (e InboxEntry) Asker() string { return e.asker }

// AskerVia is the principal that asked, where it says more than Asker.
func (e InboxEntry) AskerVia() string { return via(e.Asker(), e.Request.RequestedBy) }

// via is the principal by beside worker: "" when it only repeats the
// worker's name (a token named after its worker).
func via(worker, by string) string {
	if by == worker || by == "token:"+worker {
		return ""
	}
	return by
}

// AnsweredNote confirms an answer and shows what became of the item.
type AnsweredNote struct {
	Project graph.Project
	Request attention.Request
	Item    graph.Item
}

// Render writes the page (after fit, which renders its entries).
func (p *InboxPage) Render(w http.ResponseWriter) error { return render(w, "inbox", p) }

// inboxEntriesBytes bounds the HTML of a page's entries: the page with
// its layout, header, answered note and pager (well under 64 KiB) stays
// within wgpage.MaxBytes, the byte budget of every page.
const inboxEntriesBytes = wgpage.MaxBytes - 64<<10

// inboxBodyBytes is how much of an item's description an inbox entry
// shows (the entry shows its start, clipped, and links to the item).
// With the context and late reports cut as jsonBlock cuts them, it bounds
// the HTML of one entry well under the page's budget: a description of
// 1 MiB of "&" would be 5 MiB of markup on its own.
const inboxBodyBytes = 16 << 10

// cutText is s cut at most n bytes, at a rune boundary, and whether it was
// cut.
func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…", true
}

// fit renders the page's entries, once its layout is set, and keeps those
// whose HTML fits in inboxEntriesBytes, never fewer than the first: a page
// cut there ends with the cursor of its last entry, so the next page
// starts with the first one left out. The budget inboxPage applies
// counts the requests' and items' texts as JSON answers them, which a page
// renders larger: text is HTML-escaped (a quote is 5 bytes), markdown
// becomes markup, and a late report's payload is shown too, so only the
// rendered bytes bound the page. One entry alone stays well within the
// budget: its context and payloads are cut as jsonBlock cuts them and its
// item's description at inboxBodyBytes.
func (p *InboxPage) fit() error {
	bytes := 0
	for i := range p.Entries {
		e := &p.Entries[i]
		e.page = p
		var buf strings.Builder
		if err := executeTemplate(&buf, "inbox", "inbox-entry", e); err != nil {
			return err
		}
		e.HTML = template.HTML(buf.String())
		if bytes += buf.Len(); i > 0 && bytes > inboxEntriesBytes {
			p.Entries, p.Next = p.Entries[:i], p.Entries[i-1].Request.Key().Cursor()
			break
		}
	}
	p.OverdueShown = 0
	for _, e := range p.Entries {
		if e.Request.Overdue() {
			p.OverdueShown++
		}
	}
	return nil
}

// PageSize is how many requests a page of the inbox shows at most.
func (p *InboxPage) PageSize() int { return inboxLimit }

// CutShort reports whether the byte budget ended this page before
// PageSize requests while more follow: the header then says so, and how
// many it shows, instead of the page size alone.
func (p *InboxPage) CutShort() bool { return p.Next != "" && len(p.Entries) < inboxLimit }

// FirstURL is the inbox's first page (with the all-projects filter).
func (p *InboxPage) FirstURL() string {
	if p.AllProjects != nil {
		return p.AllProjects.FilterURL(p.AllProjects.Filter)
	}
	return "/p/" + url.PathEscape(p.Project.Name) + "/inbox"
}

// NextURL is the inbox's page after this one.
func (p *InboxPage) NextURL() string {
	if p.AllProjects != nil {
		return p.AllProjects.NextURL(p.Next)
	}
	return "/p/" + url.PathEscape(p.Project.Name) + "/inbox?" + url.Values{"after": {p.Next}}.Encode()
}

func (u *ui) inbox(r *req) error {
	page := &InboxPage{}
	if err := r.inboxPage(page, []graph.Project{r.project}, r.QueryParam("after")); err != nil {
		return err
	}
	page.Layout = r.base("Inbox", "inbox")
	page.Open = page.OpenAttention
	if err := page.fit(); err != nil {
		return err
	}
	// ?req=<id> (a notification's link): the page that shows that open
	// request, the first one when it shows it (as fit left it), else the
	// page it starts.
	if s := r.QueryParam("req"); s != "" && r.QueryParam("after") == "" {
		id, err := uuid.Parse(s)
		if err != nil {
			return wgerr.InvalidField("req", "must be an attention request's id, got %q", s)
		}
		if cursor, ok := r.inboxCursorBefore(id, page); ok {
			first := page
			page = &InboxPage{}
			if err := r.inboxPage(page, []graph.Project{r.project}, cursor); err != nil {
				return err
			}
			page.Layout, page.Open = first.Layout, first.Open
			if err := page.fit(); err != nil {
				return err
			}
		}
	}
	if id, err := uuid.Parse(r.QueryParam("answered")); err == nil {
		page.Answered = r.answeredNote(id)
	}
	return r.show(page)
}

// inboxCursorBefore is the cursor of the inbox page that starts with the
// open request id of r's project; false when page (the first) shows it
// already, or it is no open request of the project (then the first page
// is the answer).
func (r *req) inboxCursorBefore(id uuid.UUID, page *InboxPage) (string, bool) {
	for _, e := range page.Entries {
		if e.Request.ID == id {
			return "", false
		}
	}
	q, err := r.ui.Attention.Get(r.ctx(), r.project.ID, id)
	if err != nil || q.State != attention.StateOpen {
		return "", false
	}
	k := q.Key()
	k.Seq-- // the cursor names the request before: the page starts with q
	return k.Cursor(), true
}

// inboxPage fills page with a page of the open requests of projects (each
// read on its own: no statement spans projects) in the inbox's order,
// after the cursor (the query's after): the overdue first, then the
// others, each oldest first (attention.Service.Inbox), at most
// inboxLimit, with the cursor of the next page and the counts of open
// requests.
func (r *req) inboxPage(page *InboxPage, projects []graph.Project, cursor string) error {
	after, err := attention.InboxAfter(cursor)
	if err != nil {
		return err
	}
	page.Paged = after != nil
	if page.Paged {
		page.After = cursor
	}
	type found struct {
		p   graph.Project
		req attention.Request
	}
	var all []found
	for _, p := range projects {
		reqs, err := r.ui.Attention.Inbox(r.ctx(), p.ID, after, inboxLimit+1)
		if err != nil {
			return err
		}
		for _, q := range reqs {
			all = append(all, found{p, q})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].req.Key().Before(all[j].req.Key()) })
	if len(all) > inboxLimit {
		all = all[:inboxLimit]
		page.Next = all[len(all)-1].req.Key().Cursor()
	}
	now := r.now()
	bytes := 0
	for i, f := range all {
		e, err := r.in(f.p).inboxEntry(f.req, now)
		if err != nil {
			return err
		}
		// The page's byte budget, as the API's lists have it: the
		// questions and item descriptions it renders stop at
		// wgpage.MaxBytes (never before the first entry), and the next
		// page resumes after the last one shown.
		if bytes += e.Request.Size() + e.Item.Size(); i > 0 && bytes > wgpage.MaxBytes {
			page.Next = all[i-1].req.Key().Cursor()
			break
		}
		page.Entries = append(page.Entries, e)
	}
	return nil
}

// inboxEntry is an open request of r's project with its item's context.
func (r *req) inboxEntry(req attention.Request, now time.Time) (InboxEntry, error) {
	e := InboxEntry{Project: r.project, Request: req, Waited: now.Sub(req.CreatedAt)}
	nb, err := r.ui.Graph.Neighbourhood(r.ctx(), r.project.ID, req.ItemID)
	if err != nil {
		return e, err
	}
	e.Item, e.Dependencies = nb.Item, nb.Dependencies
	e.BodyShown, e.BodyCut = cutText(e.Item.Body, inboxBodyBytes)
	if e.LastLease, err = r.lastLease(req.ItemID); err != nil {
		return e, err
	}
	var shown []lease.Lease
	if e.LastLease != nil {
		shown = append(shown, *e.LastLease)
	}
	askers, err := r.askersOf([]attention.Request{req}, shown)
	if err != nil {
		return e, err
	}
	if req.LeaseID != nil {
		e.asker = askers[*req.LeaseID]
	}
	if req.Reason == attention.ReasonBudgetExhausted {
		b, err := r.ui.Leases.Budget(r.ctx(), r.project.ID, req.ItemID)
		if err != nil && wgerr.CodeOf(err) != wgerr.CodeNotFound {
			return e, err
		}
		var budget *lease.Budget
		if err == nil {
			budget = &b
		}
		e.BudgetForm = r.budgetForm(req.ItemID, budget)
	}
	if req.Reason == attention.ReasonUncertainOutcome && req.LeaseID != nil {
		obs, err := r.ui.Leases.Observations(r.ctx(), r.project.ID, *req.LeaseID, "", 0)
		if err != nil {
			return e, err
		}
		e.LateReports, e.LateReportsNext = obs.Observations, obs.Next
	}
	return e, nil
}

// answeredNote is the confirmation of the request id of r's project just
// answered, or nil when it cannot be read (the answer itself stands).
func (r *req) answeredNote(id uuid.UUID) *AnsweredNote {
	req, err := r.ui.Attention.Get(r.ctx(), r.project.ID, id)
	if err != nil {
		return nil
	}
	item, err := r.ui.Graph.Item(r.ctx(), r.project.ID, req.ItemID)
	if err != nil {
		return nil
	}
	return &AnsweredNote{Project: r.project, Request: req, Item: item}
}

// resolve answers a request with the chosen suggested answer or the typed
// text, or decides an uncertain outcome (decision, with a JSON result for
// done and a note), then shows the inbox with the item's new state.
func (u *ui) resolve(r *req) error {
	id, err := uuid.Parse(r.Param("id"))
	if err != nil {
		return r.fail(http.StatusNotFound, "Not found", "No such attention request.")
	}
	if d := r.FormValue("decision"); d != "" {
		var result json.RawMessage
		if s := strings.TrimSpace(r.FormValue("result")); s != "" && d == string(attention.DecisionDone) {
			result = json.RawMessage(s)
		}
		if _, err := u.Attention.Decide(r.ctx(), r.project.ID, id, attention.Decision(d), result, r.FormValue("note"), r.by()); err != nil {
			if wgerr.CodeOf(err) == wgerr.CodeInvalid {
				// A result that is not JSON, a decision the form does not
				// offer: nothing changed; back to the form's page saying
				// what to correct (the typed result and note stay in the
				// browser's drafts).
				msg, _ := userMessage(err)
				msg, _ = cutText("Not decided: "+msg, flashMax)
				r.setFlash(msg, true)
				return r.Redirect(http.StatusSeeOther, r.returnURL(r.projectURL("/inbox")))
			}
			if msg, ok := blockedDecision(err); ok {
				// Nothing changed and the request is still open: back to
				// the page the form came from, saying what the item waits
				// for (the typed note and result stay in the browser's
				// drafts, which only a confirmed answer forgets).
				r.setFlash(msg, true)
				return r.Redirect(http.StatusSeeOther, r.returnURL(r.projectURL("/inbox")))
			}
			if !r.closedAlready(err, id, func(c attention.Request) bool {
				return c.Decision != nil && *c.Decision == attention.Decision(d)
			}) {
				return r.closedByOther(err, id)
			}
		}
		return r.Redirect(http.StatusSeeOther, r.answeredURL(id))
	}
	answer := r.FormValue("suggested")
	if answer == "" {
		answer = r.FormValue("answer")
	}
	if attention.Blank(answer) {
		r.setFlash("Type an answer or pick one of the suggested answers.", true)
		return r.Redirect(http.StatusSeeOther, r.returnURL(r.projectURL("/inbox")))
	}
	if _, err := u.Attention.Resolve(r.ctx(), r.project.ID, id, answer, r.by()); err != nil {
		if !r.closedAlready(err, id, func(c attention.Request) bool {
			return c.State == attention.StateResolved && c.Decision == nil && textOf(c.Answer) == strings.TrimSpace(answer)
		}) {
			return r.closedByOther(err, id)
		}
	}
	return r.Redirect(http.StatusSeeOther, r.answeredURL(id))
}

// dismiss closes a request without an answer.
func (u *ui) dismiss(r *req) error {
	id, err := uuid.Parse(r.Param("id"))
	if err != nil {
		return r.fail(http.StatusNotFound, "Not found", "No such attention request.")
	}
	note := r.FormValue("answer")
	if _, err := u.Attention.Dismiss(r.ctx(), r.project.ID, id, r.by(), note); err != nil {
		if !r.closedAlready(err, id, func(c attention.Request) bool {
			return c.State == attention.StateDismissed && textOf(c.Answer) == strings.TrimSpace(note)
		}) {
			return r.closedByOther(err, id)
		}
	}
	return r.Redirect(http.StatusSeeOther, r.answeredURL(id))
}

// closedAlready reports whether err refused to close request id because
// this person already closed it as the form asks (same reports it): the
// same form sent twice, by a double click or a resend after the first
// answer's page was lost. The second post then shows the confirmation of
// the first instead of a conflict; a different answer, or another
// person's, stays a conflict.
func (r *req) closedAlready(err error, id uuid.UUID, same func(attention.Request) bool) bool {
	if wgerr.CodeOf(err) != wgerr.CodeConflict {
		return false
	}
	c, gerr := r.ui.Attention.Get(r.ctx(), r.project.ID, id)
	if gerr != nil || c.State == attention.StateOpen || c.ResolvedBy == nil || *c.ResolvedBy != r.by() {
		return false
	}
	return same(c)
}

// closedByOther answers a form refused by err: when err is the conflict
// of a request that is closed already (someone else answered, dismissed
// or decided it, or this person did otherwise), a conflict page that says
// who closed it, when and how, so the person sees why what they sent was
// not (what they typed stays in the browser's drafts), with links to the
// item and back to the inbox; otherwise err.
func (r *req) closedByOther(err error, id uuid.UUID) error {
	if wgerr.CodeOf(err) != wgerr.CodeConflict {
		return err
	}
	c, gerr := r.ui.Attention.Get(r.ctx(), r.project.ID, id)
	if gerr != nil || c.State == attention.StateOpen {
		return err
	}
	how := "dismissed"
	switch {
	case c.Decision != nil:
		how = "decided (" + string(*c.Decision) + ")"
	case c.State == attention.StateResolved:
		how = "answered"
	}
	msg := "This request was already " + how
	if c.ResolvedBy != nil {
		msg += " by " + *c.ResolvedBy
	}
	if c.ResolvedAt != nil {
		msg += ", " + r.ago(*c.ResolvedAt)
	}
	if a := strings.TrimSpace(textOf(c.Answer)); a != "" {
		a, _ = cutText(a, flashMax)
		msg += ", with: “" + a + "”"
	}
	return r.failWithLinks(http.StatusConflict, "Not sent: the request is closed", msg+".", []Link{
		{URL: r.projectURL("/items/" + c.ItemID.String()), Text: "Its item"},
		{URL: r.returnURL(r.projectURL("/inbox")), Text: "Back to the inbox"},
	})
}

// flashMax bounds a one-time message made from a refusal's text (its
// cookie must stay well under a browser's 4 KB).
const flashMax = 1500

// blockedDecision is the message for a decision refused as blocked (the
// item waits for unfinished work), at most flashMax bytes, and whether err
// is one.
func blockedDecision(err error) (string, bool) {
	var we *wgerr.Error
	if wgerr.CodeOf(err) != wgerr.CodeBlocked || !errors.As(err, &we) {
		return "", false
	}
	msg := we.Message
	if len(msg) > flashMax {
		cut := flashMax
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg, true
}

// textOf is *s, or "" for nil.
func textOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// answeredURL is where an answer to request id returns: the page the form
// came from (the project's inbox by default) saying what was answered. The
// all-projects inbox also gets its project filter back and the request's
// project, to show the confirmation.
func (r *req) answeredURL(id uuid.UUID) string {
	back := r.backTo(r.projectURL("/inbox"))
	q := r.inboxPageOf(back)
	q.Set("answered", id.String())
	if back == allInboxPath {
		q.Set("in", r.project.Name)
	}
	return back + "?" + q.Encode()
}

// returnURL is where a form returns when it does not say what it answered
// (a budget raised in the inbox, an answer refused): the page it asks for
// (backTo, else def), on the inbox the page of it the form was on.
func (r *req) returnURL(def string) string {
	back := r.backTo(def)
	if q := r.inboxPageOf(back); len(q) > 0 {
		return back + "?" + q.Encode()
	}
	return back
}

// inboxPageOf is the query naming the page of the inbox at back (a path
// backTo allowed) that the form was on: its cursor, when it was not the
// first and the cursor reads as one, and on the all-projects inbox its
// project filter. Empty for any other page.
func (r *req) inboxPageOf(back string) url.Values {
	q := url.Values{}
	if back != allInboxPath && back != r.projectURL("/inbox") {
		return q
	}
	if f := r.FormValue("filter"); f != "" && back == allInboxPath {
		q.Set("project", f)
	}
	if a := r.FormValue("after"); a != "" {
		if c, err := attention.InboxAfter(a); err == nil && c != nil {
			q.Set("after", a)
		}
	}
	return q
}

// backTo is the page a form asks to return to (a path on this site), or
// def.
func (r *req) backTo(def string) string {
	b := r.FormValue("back")
	if b == "" || safeNext(b) != b || strings.ContainsAny(b, "?#") {
		return def
	}
	return b
}
