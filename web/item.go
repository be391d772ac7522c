package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// itemLeasePage is how many of an item's leases its page and timeline show
// at a time: the newest ones, and older ones a page further each (an item
// retried thousands of times is never read whole).
const itemLeasePage = 100

// itemAttentionPage is how many of an item's attention requests its page
// shows at a time: the newest ones, and older ones a page further each (an
// item that collected thousands of questions is never read whole).
const itemAttentionPage = 50

// ItemPage is everything about one item.
type ItemPage struct {
	Layout
	Item graph.Item
	Near graph.Neighbourhood
	// Attention is a page of the item's requests, oldest first;
	// OlderAttention links to the page of the requests asked before them
	// ("" when none), and NewestAttention to the newest page ("" on it).
	Attention       []attention.Request
	OlderAttention  string
	NewestAttention string
	Leases          []lease.Lease // a page of them, oldest first
	// LeaseTotal is how many leases the item has had; OlderLeases links
	// to the page of the leases before Leases ("" when none), and
	// NewestLeases to the first page ("" on it).
	LeaseTotal   int
	OlderLeases  string
	NewestLeases string
	Timeline     *Timeline
	Graph        drawing
	// Choices are open items it could depend on.
	Choices []graph.Item
	// DependencyError is a refused dependency; Cycle is the cycle it would
	// have closed (each waits for the next; the last is the first again).
	DependencyError string
	Cycle           []graph.ItemRef
	// DependencyTyped is what the refused dependency's field held: the
	// form shows it again, to correct.
	DependencyTyped string
	// Cost is what the item's own leases and its subtree spent; Budget is
	// the item's budget (nil: none).
	Cost   lease.ItemUsage
	Budget *lease.Budget
	// BudgetForm sets or raises the budget (nil on a finished item).
	BudgetForm *BudgetForm
	// Unoffered are the item's required capabilities that no worker
	// offered in a claim within OfferWindow, nor holds a live lease
	// having offered them last.
	Unoffered   []string
	OfferWindow time.Duration
	// askers are the workers of the leases that asked the item's
	// requests, by lease id (askersOf).
	askers map[uuid.UUID]string
}

// Render writes the page.
func (p *ItemPage) Render(w http.ResponseWriter) error { return render(w, "item", p) }

// Asker is the worker whose lease asked r (the request's own lease, shown
// on the page or not), or "" for a request no lease of the item opened (a
// person's hold, the system).
func (p *ItemPage) Asker(r attention.Request) string {
	if r.LeaseID == nil {
		return ""
	}
	return p.askers[*r.LeaseID]
}

// AskerVia is the principal that asked r, where it says more than Asker.
func (p *ItemPage) AskerVia(r attention.Request) string { return via(p.Asker(r), r.RequestedBy) }

// OutcomeLegend lists the outcomes for the timeline's legend.
func (p *ItemPage) OutcomeLegend() []string {
	out := []string{""}
	for _, o := range outcomes {
		out = append(out, string(o))
	}
	return out
}

// ShownEpochs names the epochs of the leases shown ("epochs 51 to 150")
// when they are not all of the item's, else "".
func (p *ItemPage) ShownEpochs() string {
	if len(p.Leases) == 0 || len(p.Leases) == p.LeaseTotal {
		return ""
	}
	return fmt.Sprintf("epochs %d to %d", p.Leases[0].Epoch, p.Leases[len(p.Leases)-1].Epoch)
}

// Open reports whether the item is neither done nor cancelled.
func (p *ItemPage) Open() bool { return p.Item.Status == graph.StatusOpen }

func (u *ui) item(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	page, err := r.itemPage(item.ID)
	if err != nil {
		return err
	}
	return r.show(page)
}

// itemPage gathers the item page.
func (r *req) itemPage(id uuid.UUID) (*ItemPage, error) {
	u := r.ui
	near, err := u.Graph.Neighbourhood(r.ctx(), r.project.ID, id)
	if err != nil {
		return nil, err
	}
	page := &ItemPage{Item: near.Item, Near: near}
	// The two lists page apart: each link keeps the other list's page.
	asked, cursor := r.QueryParam("attention"), r.QueryParam("leases")
	hist, err := u.Attention.Latest(r.ctx(), r.project.ID, id, asked, itemAttentionPage)
	if err != nil {
		return nil, err
	}
	page.Attention = hist.Requests
	leases, err := r.itemLeases(id, cursor, itemLeasePage)
	if err != nil {
		return nil, err
	}
	page.Leases, page.LeaseTotal = leases.Leases, leases.Total
	itemURL := r.projectURL("/items/" + id.String())
	link := func(attention, leases, anchor string) string {
		q := url.Values{}
		if attention != "" {
			q.Set("attention", attention)
		}
		if leases != "" {
			q.Set("leases", leases)
		}
		if len(q) == 0 {
			return itemURL + anchor
		}
		return itemURL + "?" + q.Encode() + anchor
	}
	if hist.Older != "" {
		page.OlderAttention = link(hist.Older, cursor, "#attention")
	}
	if asked != "" {
		page.NewestAttention = link("", cursor, "#attention")
	}
	if leases.Older != "" {
		page.OlderLeases = link(asked, leases.Older, "#leases")
	}
	if cursor != "" {
		page.NewestLeases = link(asked, "", "#leases")
	}
	if page.askers, err = r.askersOf(page.Attention, page.Leases); err != nil {
		return nil, err
	}
	obs, err := r.observations(page.Leases)
	if err != nil {
		return nil, err
	}
	page.Timeline = buildTimeline(page.Leases, obs, r.now())
	if page.Cost, err = u.Leases.UsageOf(r.ctx(), r.project.ID, id); err != nil {
		return nil, err
	}
	switch b, err := u.Leases.Budget(r.ctx(), r.project.ID, id); {
	case err == nil:
		page.Budget = &b
	case wgerr.CodeOf(err) != wgerr.CodeNotFound:
		return nil, err
	}
	if page.Open() {
		page.BudgetForm = r.budgetForm(id, page.Budget)
	}
	if page.Open() {
		page.OfferWindow = lease.OfferWindow
		if page.Unoffered, err = u.Leases.UnofferedCapabilities(r.ctx(), r.project.ID, near.Item.Requires); err != nil {
			return nil, err
		}
	}
	if page.Graph, err = r.pictureAround(id, 1, 60); err != nil {
		return nil, err
	}
	if page.Open() {
		if page.Choices, err = r.dependencyChoices(near); err != nil {
			return nil, err
		}
	}
	page.Layout = r.base(near.Item.Title, "items")
	return page, nil
}

// maxChoiceWaiters bounds the walk dependencyChoices makes over the items
// that wait for an item.
const maxChoiceWaiters = 10_000

// dependencyChoices are the open items (up to graph.MaxPageSize) the item
// of near could gain as a dependency: not itself, not one it depends on
// already, and none that waits for it, directly or not (graph.Waiters),
// whose dependency would be refused as a cycle. When more than
// maxChoiceWaiters items wait for it, none is suggested: the ones left
// could not be told apart from those that close a cycle without walking
// further (an id typed in the field is still checked when it is added).
func (r *req) dependencyChoices(near graph.Neighbourhood) ([]graph.Item, error) {
	id := near.Item.ID
	waiters, more, err := r.ui.Graph.Waiters(r.ctx(), r.project.ID, id, maxChoiceWaiters)
	if err != nil || more {
		return nil, err
	}
	refused := make(map[uuid.UUID]bool, len(waiters)+len(near.Dependencies)+1)
	refused[id] = true
	for _, w := range waiters {
		refused[w] = true
	}
	for _, d := range near.Dependencies {
		refused[d.ID] = true
	}
	open, err := r.ui.Graph.ListItems(r.ctx(), r.project.ID, graph.ListFilter{
		States: []graph.State{graph.StateReady, graph.StateLeased, graph.StateBlocked, graph.StateAttention},
		Limit:  graph.MaxPageSize,
	})
	if err != nil {
		return nil, err
	}
	var out []graph.Item
	for _, c := range open.Items {
		if !refused[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// itemLeases returns a page of the item's leases (lease.ItemLeases): the
// newest n of those before the page cursor names ("": the newest).
func (r *req) itemLeases(id uuid.UUID, cursor string, n int) (lease.ItemLeasePage, error) {
	return r.ui.Leases.ItemLeases(r.ctx(), r.project.ID, id, cursor, n)
}

// askersOf maps the lease of each request that a lease asked to that
// lease's worker: from the leases shown when it is among them, else read
// by its id (one lookup of a lease per such request, however long the
// item's history: a question asked under a lease older than the page
// shows still names its worker).
func (r *req) askersOf(reqs []attention.Request, shown []lease.Lease) (map[uuid.UUID]string, error) {
	out := map[uuid.UUID]string{}
	for _, l := range shown {
		out[l.ID] = l.Worker
	}
	for _, q := range reqs {
		if q.LeaseID == nil {
			continue
		}
		if _, ok := out[*q.LeaseID]; ok {
			continue
		}
		l, err := r.ui.Leases.Get(r.ctx(), r.project.ID, *q.LeaseID)
		switch {
		case err == nil:
			out[l.ID] = l.Worker
		case wgerr.CodeOf(err) == wgerr.CodeNotFound:
			out[*q.LeaseID] = ""
		default:
			return nil, err
		}
	}
	return out, nil
}

// lastLease is the item's most recent lease, or nil (one row read).
func (r *req) lastLease(id uuid.UUID) (*lease.Lease, error) {
	p, err := r.itemLeases(id, "", 1)
	if err != nil || len(p.Leases) == 0 {
		return nil, err
	}
	return &p.Leases[0], nil
}

// observations loads the refused reports of the leases that had any.
func (r *req) observations(leases []lease.Lease) (map[uuid.UUID][]lease.Observation, error) {
	out := map[uuid.UUID][]lease.Observation{}
	for _, l := range leases {
		if l.StaleCalls == 0 {
			continue
		}
		// The first page of them (what the timeline marks).
		obs, err := r.ui.Leases.Observations(r.ctx(), r.project.ID, l.ID, "", 0)
		if err != nil {
			return nil, err
		}
		out[l.ID] = obs.Observations
	}
	return out, nil
}

// addDependency adds "this item depends on that one". A refused cycle is
// shown on the item page, naming the items around it.
func (u *ui) addDependency(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	target := strings.TrimSpace(r.FormValue("depends_on"))
	dep, perr := uuid.Parse(target)
	if perr != nil {
		if _, _, rerr := graph.IDPrefixRange(strings.ToLower(target)); rerr != nil {
			perr = wgerr.InvalidField("depends_on", "type an item id (or at least its first %d characters)", graph.MinIDPrefix)
		} else {
			dep, perr = r.resolveShortID(target)
		}
	}
	if perr == nil {
		err = u.Graph.AddDependency(r.ctx(), r.project.ID, item.ID, dep, r.by())
		if err == nil {
			return r.redirect(r.projectURL("/items/"+item.ID.String()), "Dependency added.")
		}
	} else {
		err = perr
	}
	msg, ok := userMessage(err)
	if !ok {
		return err
	}
	page, perr := r.itemPage(item.ID)
	if perr != nil {
		return perr
	}
	page.DependencyError, page.DependencyTyped = msg, target
	var cycle *graph.CycleError
	if errors.As(err, &cycle) {
		page.DependencyError = "This dependency would close a cycle, so it was not added:"
		page.Cycle = cycle.Cycle
	}
	// The status the API gives the same error: 409 for a cycle, 404 for
	// an item that does not exist, 400 for what is not an id.
	_, status := wgerr.HTTPStatus(err)
	return r.showStatus(status, page)
}

// resolveShortID finds the item whose id starts with prefix (at least
// graph.MinIDPrefix hex digits), as shown on pages, through the id lookup
// (a range scan of the primary key, not a walk through the items).
func (r *req) resolveShortID(prefix string) (uuid.UUID, error) {
	found, err := r.itemsStartingWith(prefix)
	if err != nil {
		return uuid.Nil, err
	}
	if len(found) > 1 {
		return uuid.Nil, notFoundf("%s start with %q; type more of the id", countItems(found), strings.ToLower(prefix))
	}
	return found[0].ID, nil
}

// itemsStartingWith returns the items whose id starts with prefix, at
// least one; none, or a prefix that is not the start of an id, is
// not_found.
func (r *req) itemsStartingWith(prefix string) ([]graph.IDMatch, error) {
	prefix = strings.ToLower(prefix)
	if _, _, err := graph.IDPrefixRange(prefix); err != nil {
		return nil, notFoundf("type an item id (or at least its first %d characters)", graph.MinIDPrefix)
	}
	found, err := r.ui.Graph.LookupIDs(r.ctx(), r.project.ID, prefix, []graph.IDKind{graph.KindItem})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, notFoundf("no item id starts with %q", prefix)
	}
	return found, nil
}

// countItems says how many items found holds ("2 items"), or that there
// are more when the lookup stopped at its limit.
func countItems(found []graph.IDMatch) string {
	if len(found) >= graph.MaxIDMatches {
		return fmt.Sprintf("at least %d items", len(found))
	}
	return fmt.Sprintf("%d items", len(found))
}

// itemRoute is the address of an item's page; its own pages (edit, graph)
// add to it.
const itemRoute = "/p/:project/items/:id"

// byShortID lets the pages of an item (GET itemRoute and below it) be
// addressed by the first characters of its id, as the board, the list and
// the CLI's tables show them: one item's id starts with them, and the
// answer is a redirect to the same page (and query) under its whole id (302,
// not permanent: a prefix that names one item today may name two
// tomorrow); several, and the page lists them to pick from; none, not
// found.
func (u *ui) byShortID(fn handlerFunc) handlerFunc {
	return func(r *req) error {
		short := r.Param("id")
		if _, err := uuid.Parse(short); err == nil {
			return fn(r)
		}
		if _, _, err := graph.IDPrefixRange(short); err != nil {
			return notFoundf("no such item")
		}
		found, err := r.itemsStartingWith(short)
		if err != nil {
			return err
		}
		if len(found) == 1 {
			target := r.projectURL("/items/" + found[0].ID.String() + strings.TrimPrefix(r.Path(), itemRoute))
			if q := r.Request().URL.RawQuery; q != "" {
				target += "?" + q
			}
			return r.Redirect(http.StatusFound, target)
		}
		links := make([]Link, len(found))
		for i, m := range found {
			links[i] = Link{URL: r.projectURL("/items/" + m.ID.String()), Text: m.ID.String() + " " + m.Label}
		}
		return r.failWithLinks(http.StatusNotFound, "Not found",
			fmt.Sprintf("%q is the start of the ids of %s; type more of the id, or pick one:", strings.ToLower(short), countItems(found)), links)
	}
}

func (u *ui) removeDependency(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	dep, err := uuid.Parse(r.Param("dep"))
	if err != nil {
		return notFoundf("no such dependency")
	}
	if err := u.Graph.RemoveDependency(r.ctx(), r.project.ID, item.ID, dep); err != nil {
		return err
	}
	return r.redirect(r.projectURL("/items/"+item.ID.String()), "Dependency removed.")
}
