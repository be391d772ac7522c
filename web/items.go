package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// boardStates are the board's columns, in the order work flows.
var boardStates = []graph.State{
	graph.StateReady, graph.StateLeased, graph.StateBlocked,
	graph.StateAttention, graph.StateDone, graph.StateCancelled,
}

// boardColumnSize is how many items a board column shows.
const boardColumnSize = 25

// ItemsFilter is the board's filter form.
type ItemsFilter struct {
	State  string
	Label  string
	Parent string
	Text   string
	View   string // "board" or "list"
	// Sort is the list's order (graph.ItemOrder); the list shows the
	// newest items first by default.
	Sort string
}

// defaultItemSort is the items list's order when the URL names none:
// newest first, where people look for what just happened.
const defaultItemSort = string(graph.OrderNewest)

// ItemsPage is the items board (a column per state) or a paginated list.
type ItemsPage struct {
	Layout
	Filter     ItemsFilter
	ParentItem *graph.Item
	Columns    []BoardColumn
	List       []graph.Item
	NextCursor string
	// Holders is the worker that holds each leased item shown.
	Holders map[uuid.UUID]string
	// IDMatches are the items whose id starts with the search text, when
	// it is the start of an id (a short id copied from a table).
	IDMatches []graph.IDMatch
	// cursor is the list page's cursor ("" on the first page).
	cursor string
	// Error says what is wrong with the filters (the page then lists
	// nothing and keeps the form, to mend them).
	Error string
}

// Filtered says whether the page shows only the items its filters match.
func (p *ItemsPage) Filtered() bool {
	f := p.Filter
	return f.Text != "" || f.Label != "" || f.Parent != "" || f.State != ""
}

// Empty says whether the page shows no item: every column of the board,
// or the list, is empty (a later page of the list that came up empty is
// not: items came before it).
func (p *ItemsPage) Empty() bool {
	if p.Error != "" {
		return false // nothing was listed: the filters are wrong
	}
	if p.Filter.View == "list" {
		return len(p.List) == 0 && p.cursor == ""
	}
	for _, c := range p.Columns {
		if len(c.Items) > 0 || c.More {
			return false
		}
	}
	return true
}

// BoardColumn is the items of one state.
type BoardColumn struct {
	State graph.State
	Items []graph.Item
	More  bool
}

// URL is the items page in a view ("board" or "list") with the page's
// filters, a state (list only) and a cursor.
func (p *ItemsPage) URL(view, state, cursor string) string {
	return p.sortedURL(view, state, cursor, p.Filter.Sort)
}

func (p *ItemsPage) sortedURL(view, state, cursor, sort string) string {
	if view == "board" {
		view, state, cursor, sort = "", "", "", ""
	}
	if sort == defaultItemSort {
		sort = ""
	}
	return "/p/" + url.PathEscape(p.Project.Name) + "/items" + query("view", view, "state", state,
		"label", p.Filter.Label, "parent", p.Filter.Parent, "q", p.Filter.Text, "sort", sort, "cursor", cursor)
}

// Column is the list's header of the column sorted by key (created,
// priority or updated), a link that sorts the list by it.
func (p *ItemsPage) Column(label, key string) SortColumn {
	return sortColumn(label, key, "-"+key, p.Filter.Sort, func(order string) string {
		return p.sortedURL("list", p.Filter.State, "", order)
	})
}

// BoardStates are the states to filter by.
func (p *ItemsPage) BoardStates() []graph.State { return boardStates }

// Render writes the page.
func (p *ItemsPage) Render(w http.ResponseWriter) error { return render(w, "items", p) }

func (u *ui) items(r *req) error {
	f := ItemsFilter{
		State:  r.QueryParam("state"),
		Label:  strings.TrimSpace(r.QueryParam("label")),
		Parent: strings.TrimSpace(r.QueryParam("parent")),
		Text:   strings.TrimSpace(r.QueryParam("q")),
		View:   r.QueryParam("view"),
		Sort:   r.QueryParam("sort"),
	}
	if f.Sort == "" {
		f.Sort = defaultItemSort
	}
	page := &ItemsPage{Filter: f}
	status := http.StatusOK
	if err := u.listItems(r, page); err != nil {
		msg, ok := userMessage(err)
		if !ok {
			return err
		}
		// The page with its form and what is wrong with the filters,
		// answered with the status the API gives the same refusal, as
		// the lease history does.
		page.Error, page.List, page.Columns = msg, nil, nil
		_, status = wgerr.HTTPStatus(err)
	}
	page.Layout = r.base("Items", "items")
	return r.showStatus(status, page)
}

// listItems fills the page with the items its filter matches: the list, or
// the board's columns.
func (u *ui) listItems(r *req, page *ItemsPage) error {
	f := page.Filter
	if !validItemSort(f.Sort) {
		return wgerr.InvalidField("sort", "the list sorts by created, priority or updated (a leading - for descending), got %q", f.Sort)
	}
	base := graph.ListFilter{Label: f.Label, Text: f.Text}
	if f.Parent != "" {
		id, err := uuid.Parse(f.Parent)
		if err != nil {
			if !isIDPrefix(f.Parent) {
				return wgerr.InvalidField("parent", "must be an item id, or its first characters, got %q", f.Parent)
			}
			if id, err = r.resolveShortID(f.Parent); err != nil {
				return err
			}
			page.Filter.Parent = id.String()
		}
		parent, err := u.Graph.Item(r.ctx(), r.project.ID, id)
		if err != nil {
			return err
		}
		page.ParentItem = &parent
		base.ParentID = &id
	}
	if f.View == "list" || f.State != "" {
		page.Filter.View = "list"
		lf := base
		if f.State != "" {
			lf.States = []graph.State{graph.State(f.State)}
		}
		lf.Cursor, lf.Limit, lf.Order = r.QueryParam("cursor"), 100, graph.ItemOrder(f.Sort)
		list, err := u.Graph.ListItems(r.ctx(), r.project.ID, lf)
		if err != nil {
			return err
		}
		page.List, page.NextCursor, page.cursor = list.Items, list.NextCursor, lf.Cursor
	} else {
		page.Filter.View = "board"
		for _, st := range boardStates {
			lf := base
			lf.States, lf.Limit = []graph.State{st}, boardColumnSize
			list, err := u.Graph.ListItems(r.ctx(), r.project.ID, lf)
			if err != nil {
				return err
			}
			page.Columns = append(page.Columns, BoardColumn{State: st, Items: list.Items, More: list.NextCursor != ""})
		}
	}
	if isIDPrefix(f.Text) {
		var err error
		if page.IDMatches, err = u.Graph.LookupIDs(r.ctx(), r.project.ID, f.Text, []graph.IDKind{graph.KindItem}); err != nil {
			return err
		}
	}
	return page.findHolders(r)
}

// findHolders fills Holders when the page shows a leased item: one read of
// the project's live leases.
func (p *ItemsPage) findHolders(r *req) error {
	leased := false
	for _, it := range p.List {
		leased = leased || it.State == graph.StateLeased
	}
	for _, c := range p.Columns {
		leased = leased || (c.State == graph.StateLeased && len(c.Items) > 0)
	}
	if !leased {
		return nil
	}
	active, err := r.ui.Leases.Active(r.ctx(), r.project.ID)
	if err != nil {
		return err
	}
	p.Holders = make(map[uuid.UUID]string, len(active))
	for _, l := range active {
		p.Holders[l.ItemID] = l.Worker
	}
	return nil
}

// ItemFormPage creates or edits an item.
type ItemFormPage struct {
	Layout
	Item    *graph.Item // nil: a new item
	Form    ItemForm
	Error   string
	Choices []graph.Item // items to pick a parent or dependency from
}

// ItemForm is the item form's fields as typed.
type ItemForm struct {
	Title    string
	Body     string
	Priority string
	Labels   string
	// Requires (capabilities a claim must offer) and Touches (write
	// scopes its lease holds), comma separated.
	Requires  string
	Touches   string
	Parent    string
	DependsOn string
	Version   int32
	// fleet: the form carried the requires and touches fields (an edit
	// posted without them leaves them as they are).
	fleet bool
}

// Render writes the page.
func (p *ItemFormPage) Render(w http.ResponseWriter) error { return render(w, "item_form", p) }

func (u *ui) newItemForm(r *req) error {
	page := &ItemFormPage{Form: ItemForm{Priority: "0", Parent: r.QueryParam("parent")}}
	return r.showItemForm(http.StatusOK, page, "New item")
}

func (r *req) showItemForm(status int, page *ItemFormPage, title string) error {
	choices, err := r.ui.Graph.ListItems(r.ctx(), r.project.ID, graph.ListFilter{
		States: []graph.State{graph.StateReady, graph.StateLeased, graph.StateBlocked, graph.StateAttention},
		Limit:  graph.MaxPageSize,
	})
	if err != nil {
		return err
	}
	page.Choices = choices.Items
	page.Layout = r.base(title, "items")
	return r.showStatus(status, page)
}

func (u *ui) createItem(r *req) error {
	form := readItemForm(r)
	in := graph.NewItem{Title: form.Title, Body: form.Body, Labels: splitLabels(form.Labels),
		Requires: splitLabels(form.Requires), Touches: splitLabels(form.Touches), CreatedBy: r.by()}
	var err error
	if in.Priority, err = parsePriority(form.Priority); err != nil {
		return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Form: form, Error: err.Error()}, "New item")
	}
	if form.Parent != "" {
		id, err := r.typedItemID(strings.TrimSpace(form.Parent))
		if err != nil {
			msg, ok := userMessage(err)
			if !ok {
				return err
			}
			return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Form: form, Error: "Parent: " + msg}, "New item")
		}
		in.ParentID = &id
	}
	for _, s := range strings.FieldsFunc(form.DependsOn, isListSep) {
		id, err := r.typedItemID(strings.TrimSpace(s))
		if err != nil {
			msg, ok := userMessage(err)
			if !ok {
				return err
			}
			return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Form: form, Error: "Depends on: " + msg}, "New item")
		}
		in.DependsOn = append(in.DependsOn, id)
	}
	item, err := u.Graph.CreateItem(r.ctx(), r.project.ID, in)
	if err != nil {
		if msg, ok := userMessage(err); ok {
			return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Form: form, Error: msg}, "New item")
		}
		return err
	}
	return r.redirect(r.projectURL("/items/"+item.ID.String()), "Item created.")
}

func (u *ui) editItemForm(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	form := ItemForm{
		Title: item.Title, Body: item.Body, Priority: formatInt(int64(item.Priority)),
		Labels: strings.Join(item.Labels, ", "), Requires: strings.Join(item.Requires, ", "),
		Touches: strings.Join(item.Touches, ", "), Version: item.Version,
	}
	return r.showItemForm(http.StatusOK, &ItemFormPage{Item: &item, Form: form}, "Edit item")
}

func (u *ui) editItem(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	form := readItemForm(r)
	prio, err := parsePriority(form.Priority)
	if err != nil {
		return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Item: &item, Form: form, Error: err.Error()}, "Edit item")
	}
	// The version the form was filled in from: an edit applies only to
	// it, so a stale form never overwrites a newer edit. A form without a
	// valid one is refused rather than stored unchecked.
	if _, ok := parseVersion(r.FormValue("version")); !ok {
		return r.showItemForm(http.StatusBadRequest, &ItemFormPage{Item: &item, Form: form,
			Error: "This form has no valid version of the item: open its edit page again."}, "Edit item")
	}
	labels := splitLabels(form.Labels)
	patch := graph.ItemPatch{Title: &form.Title, Body: &form.Body, Priority: &prio, Labels: &labels,
		IfVersion: &form.Version}
	if form.fleet {
		requires, touches := splitLabels(form.Requires), splitLabels(form.Touches)
		patch.Requires, patch.Touches = &requires, &touches
	}
	if _, err := u.Graph.UpdateItem(r.ctx(), r.project.ID, item.ID, patch); err != nil {
		if msg, ok := userMessage(err); ok {
			// A stale version is a conflict; bad input is the request's.
			_, status := wgerr.HTTPStatus(err)
			return r.showItemForm(status, &ItemFormPage{Item: &item, Form: form, Error: msg}, "Edit item")
		}
		return err
	}
	return r.redirect(r.projectURL("/items/"+item.ID.String()), "Saved.")
}

func (u *ui) cancelItem(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	if _, err := u.Graph.Cancel(r.ctx(), r.project.ID, item.ID, r.by(), r.FormValue("reason")); err != nil {
		if wgerr.CodeOf(err) != wgerr.CodeConflict {
			return err
		}
		// Finished meanwhile (a page opened before it was done or
		// cancelled): say so, with the way back to the item as it is now.
		now, gerr := r.itemParam()
		if gerr != nil {
			return err
		}
		msg := "“" + now.Title + "” was not cancelled: it is already " + stateTitle(string(now.State)) + ", so there is nothing left to cancel."
		return r.failWithLinks(http.StatusConflict, "Not cancelled", msg, []Link{
			{URL: r.projectURL("/items/" + item.ID.String()), Text: "The item as it is now"},
		})
	}
	return r.redirect(r.projectURL("/items/"+item.ID.String()), "Item cancelled.")
}

// holdItem puts a person's hold on the item: it will not be handed out
// until the hold is answered in the inbox. A person who holds it already
// is told so, and no second hold is placed.
func (u *ui) holdItem(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	// A person who holds the item already (the button pressed twice, or
	// in two tabs) is shown that hold; a second one would need releasing
	// too (the database refuses one).
	hold, created, err := u.Attention.HoldOnce(r.ctx(), r.project.ID, item.ID, r.FormValue("question"), r.by())
	if err != nil {
		return err
	}
	if !created {
		return r.redirect(r.projectURL("/items/"+item.ID.String()),
			"You already hold this item (placed "+r.ago(hold.CreatedAt)+"): it waits until that hold is resolved in the inbox. No second hold was placed.")
	}
	return r.redirect(r.projectURL("/items/"+item.ID.String()), "Hold placed: the item waits until the hold is resolved in the inbox.")
}

func readItemForm(r *req) ItemForm {
	f := ItemForm{
		Title:     strings.TrimSpace(r.FormValue("title")),
		Body:      r.FormValue("body"),
		Priority:  strings.TrimSpace(r.FormValue("priority")),
		Labels:    r.FormValue("labels"),
		Requires:  r.FormValue("requires"),
		Touches:   r.FormValue("touches"),
		Parent:    strings.TrimSpace(r.FormValue("parent")),
		DependsOn: r.FormValue("depends_on"),
	}
	if form, err := r.FormParams(); err == nil {
		_, req := form["requires"]
		_, tch := form["touches"]
		f.fleet = req && tch
	}
	if v, ok := parseVersion(r.FormValue("version")); ok {
		f.Version = v
	}
	// Browsers send textarea line breaks as CRLF.
	f.Body = strings.ReplaceAll(f.Body, "\r\n", "\n")
	return f
}

// itemParam loads the item named by the :id path parameter.
func (r *req) itemParam() (graph.Item, error) {
	id, err := uuid.Parse(r.Param("id"))
	if err != nil {
		return graph.Item{}, notFoundf("no such item")
	}
	return r.ui.Graph.Item(r.ctx(), r.project.ID, id)
}

// typedItemID is the item a person typed into a form: its whole id, or
// the first characters of it as pages show them (at least
// graph.MinIDPrefix hex digits), which one item of the project has. A
// refusal (not an id, no item starts with it, several do: type more) is
// a user error (userMessage); anything else is the lookup's failure.
func (r *req) typedItemID(s string) (uuid.UUID, error) {
	if id, err := uuid.Parse(s); err == nil {
		return id, nil
	}
	if !isIDPrefix(s) {
		return uuid.Nil, wgerr.New(wgerr.CodeInvalid, "%q is not an item id: type its id, or at least its first %d characters", s, graph.MinIDPrefix)
	}
	return r.resolveShortID(s)
}

// isIDPrefix reports whether s may be the start of an id as pages and
// tables show it: hex digits and dashes, at least graph.MinIDPrefix digits.
func isIDPrefix(s string) bool {
	if _, _, err := graph.IDPrefixRange(s); err != nil {
		return false
	}
	return strings.Trim(s, "0123456789abcdefABCDEF-") == ""
}

func splitLabels(s string) []string {
	out := []string{}
	for _, l := range strings.FieldsFunc(s, isListSep) {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

func isListSep(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }

func validItemSort(s string) bool {
	for _, o := range graph.ItemOrders {
		if string(o) == s {
			return true
		}
	}
	return false
}
