package web

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// outcomes lists the lease outcomes for the history filter.
var outcomes = []lease.Outcome{
	lease.OutcomeCompleted, lease.OutcomeReleased, lease.OutcomeFailed, lease.OutcomeCancelled,
	lease.OutcomeDecomposed, lease.OutcomeAttentionRequested, lease.OutcomeExpired,
}

// historyPageSize is the number of leases per history page.
const historyPageSize = 50

// HistoryFilter is the history search form as typed.
type HistoryFilter struct {
	Worker  string
	Outcome string
	Item    string
	Since   string // datetime-local, UTC
	Until   string
	Cursor  string
	// Sort is the table's order (lease.HistoryOrder); newest first by
	// default.
	Sort string
}

// defaultHistorySort is the history's order when the URL names none:
// newest first, where people look for what just happened.
const defaultHistorySort = string(lease.OrderNewest)

// Query is the filter as a query string (without the cursor).
func (f HistoryFilter) Query() string {
	return query("worker", f.Worker, "outcome", f.Outcome, "item", f.Item, "since", f.Since, "until", f.Until)
}

// LeaseRow is a lease with the title of its item.
type LeaseRow struct {
	lease.Lease
	ItemTitle string
}

// Duration is how long the lease ran (so far, for an active one).
func (l LeaseRow) Duration(now time.Time) time.Duration {
	if l.EndedAt != nil {
		return l.EndedAt.Sub(l.AcquiredAt)
	}
	return now.Sub(l.AcquiredAt)
}

// OutcomeName is the outcome, or "" while the lease is active.
func (l LeaseRow) OutcomeName() string {
	if l.Outcome == nil {
		return ""
	}
	return string(*l.Outcome)
}

// HistoryPage is the searchable lease history.
type HistoryPage struct {
	Layout
	Filter     HistoryFilter
	Outcomes   []lease.Outcome
	Rows       []LeaseRow
	NextCursor string
	Now        time.Time
	Error      string
}

// FirstURL is the first page of the search.
func (p *HistoryPage) FirstURL() string {
	return p.sortedURL("", p.Filter.Sort)
}

func (p *HistoryPage) sortedURL(cursor, sort string) string {
	if sort == defaultHistorySort {
		sort = ""
	}
	return "/p/" + url.PathEscape(p.Project.Name) + "/leases" + query("worker", p.Filter.Worker,
		"outcome", p.Filter.Outcome, "item", p.Filter.Item, "since", p.Filter.Since, "until", p.Filter.Until,
		"sort", sort, "cursor", cursor)
}

// Column is the table's header of the column sorted by key (acquired or
// ran), a link that sorts the history by it.
func (p *HistoryPage) Column(label, key string) SortColumn {
	return sortColumn(label, key, "-"+key, p.Filter.Sort, func(order string) string { return p.sortedURL("", order) })
}

// NextURL is the next page of the search, or "" on the last page.
func (p *HistoryPage) NextURL() string {
	if p.NextCursor == "" {
		return ""
	}
	return p.sortedURL(p.NextCursor, p.Filter.Sort)
}

// Render writes the page.
func (p *HistoryPage) Render(w http.ResponseWriter) error { return render(w, "leases", p) }

func (r *req) historyFilter() (HistoryFilter, lease.HistoryFilter, error) {
	f := HistoryFilter{
		Worker:  strings.TrimSpace(r.QueryParam("worker")),
		Outcome: r.QueryParam("outcome"),
		Item:    strings.TrimSpace(r.QueryParam("item")),
		Since:   r.QueryParam("since"),
		Until:   r.QueryParam("until"),
		Cursor:  r.QueryParam("cursor"),
		Sort:    r.QueryParam("sort"),
	}
	lf := lease.HistoryFilter{Worker: f.Worker, Cursor: f.Cursor, Order: lease.HistoryOrder(f.Sort)}
	if f.Outcome != "" {
		o := lease.Outcome(f.Outcome)
		lf.Outcome = &o
	}
	if f.Item != "" {
		// The whole id, or its first characters as the table shows them.
		id, err := r.typedItemID(f.Item)
		if err != nil {
			return f, lf, err
		}
		lf.ItemID = &id
	}
	var err error
	if lf.Since, err = parseLocalTime("since", f.Since); err != nil {
		return f, lf, err
	}
	if lf.Until, err = parseLocalTime("until", f.Until); err != nil {
		return f, lf, err
	}
	if lf.Since != nil && lf.Until != nil && lf.Until.Before(*lf.Since) {
		// No lease could match: the fields were typed the wrong way round.
		return f, lf, wgerr.InvalidField("until", "is before from (%s): from and to are the other way round", f.Since)
	}
	return f, lf, nil
}

// parseLocalTime reads an <input type=datetime-local> value as UTC.
//
// Errors: invalid_argument (field).
func parseLocalTime(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, wgerr.InvalidField(field, "times look like 2026-01-31T14:05 (UTC)")
}

func (u *ui) leases(r *req) error {
	f, lf, err := r.historyFilter()
	if f.Sort == "" {
		// The page, unlike the CSV export, shows what just happened first.
		f.Sort, lf.Order = defaultHistorySort, lease.OrderNewest
	}
	page := &HistoryPage{Filter: f, Outcomes: outcomes, Now: r.now()}
	if err == nil {
		lf.Limit = historyPageSize
		var p lease.Page
		p, err = u.Leases.History(r.ctx(), r.project.ID, lf)
		if err == nil {
			page.NextCursor = p.NextCursor
			page.Rows, err = r.withTitles(p.Leases)
		}
	}
	status := http.StatusOK
	if err != nil {
		msg, ok := userMessage(err)
		if !ok {
			return err
		}
		// The page with the filter and what is wrong with it, answered
		// with the status the API gives the same refusal (400 for a bad
		// time, outcome, sort or cursor), as the CSV export does.
		page.Error = msg
		_, status = wgerr.HTTPStatus(err)
	}
	page.Layout = r.base("Lease history", "leases")
	return r.showStatus(status, page)
}

// DefaultCSVMaxRows is Deps.CSVMaxRows's default: the most leases one CSV
// export of the history writes.
const DefaultCSVMaxRows = 100000

// leasesCSV exports the history matching the filter, every page of it (up
// to Deps.CSVMaxRows, then a last line saying where it stopped), oldest
// first, as PROJECT-leases.csv, written as it is read (500 leases a
// page); result is what a completion reported (JSON), empty for other
// outcomes.
func (u *ui) leasesCSV(r *req) error {
	_, lf, err := r.historyFilter()
	if err != nil {
		return err
	}
	h := r.Response().Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+r.project.Name+`-leases.csv"`)
	r.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(r.Response())
	_ = w.Write([]string{"lease_id", "item_id", "item_title", "epoch", "worker", "principal", "acquired_at",
		"expires_at", "ended_at", "outcome", "heartbeats", "last_heartbeat_at", "stale_calls",
		"tokens_in", "tokens_out", "cost_usd", "tool_calls", "outcome_detail", "result"})
	for n := 0; n < u.CSVMaxRows; {
		lf.Limit = min(500, u.CSVMaxRows-n)
		p, err := u.Leases.History(r.ctx(), r.project.ID, lf)
		if err != nil {
			// Headers are sent: end the file with the error for the reader.
			_ = w.Write([]string{"error: " + err.Error()})
			break
		}
		rows, err := r.withTitles(p.Leases)
		if err != nil {
			_ = w.Write([]string{"error: " + err.Error()})
			break
		}
		for _, l := range rows {
			_ = w.Write([]string{
				l.ID.String(), l.ItemID.String(), csvText(l.ItemTitle), strconv.FormatInt(l.Epoch, 10),
				csvText(l.Worker), csvText(l.Principal), rfc3339(&l.AcquiredAt), rfc3339(&l.ExpiresAt),
				rfc3339(l.EndedAt), l.OutcomeName(), strconv.Itoa(int(l.Heartbeats)), rfc3339(l.HeartbeatAt),
				strconv.Itoa(l.StaleCalls),
				strconv.FormatInt(l.Usage.TokensIn, 10), strconv.FormatInt(l.Usage.TokensOut, 10),
				strconv.FormatFloat(l.Usage.CostUSD, 'f', -1, 64), strconv.FormatInt(l.Usage.ToolCalls, 10),
				csvText(string(l.OutcomeDetail)), csvText(string(l.Result)),
			})
		}
		n += len(rows)
		if p.NextCursor == "" {
			break
		}
		lf.Cursor = p.NextCursor
		if n >= u.CSVMaxRows && len(rows) > 0 {
			// More leases match than one file holds: say so, and from
			// where the next export starts: a second before the last
			// lease's acquisition, to the second (grant order and
			// acquisition order may differ by moments), so it repeats the
			// last leases of this one (their lease_id tells) and misses
			// none.
			since := rows[len(rows)-1].AcquiredAt.UTC().Add(-time.Second).Format("2006-01-02T15:04:05")
			_ = w.Write([]string{fmt.Sprintf("truncated: this export stops after %d leases; export again with since=%s for the rest", n, since)})
		}
	}
	w.Flush()
	return w.Error()
}

func rfc3339(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// csvText keeps text that agents wrote from being read as a formula by a
// spreadsheet.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// withTitles labels leases with their items' titles (one query).
func (r *req) withTitles(leases []lease.Lease) ([]LeaseRow, error) {
	ids := make([]uuid.UUID, 0, len(leases))
	seen := map[uuid.UUID]bool{}
	for _, l := range leases {
		if !seen[l.ItemID] {
			seen[l.ItemID] = true
			ids = append(ids, l.ItemID)
		}
	}
	titles, err := r.ui.Graph.Titles(r.ctx(), r.project.ID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]LeaseRow, len(leases))
	for i, l := range leases {
		out[i] = LeaseRow{Lease: l, ItemTitle: titles[l.ItemID]}
	}
	return out, nil
}

// WorkersPage shows the live leases and what each worker has done.
type WorkersPage struct {
	Layout
	// Active is a page of the live leases (workersLeasePage at most):
	// stale leases first, then quiet ones, then healthy ones, each in
	// claim order. Live counts all the live leases; Cursor is the page's
	// (?live=, "" for the first) and Next the following page's.
	Active []LeaseRow
	Live   int
	Cursor string
	Next   string
	// Activity is each live lease's liveness and last activity, by id.
	Activity map[uuid.UUID]lease.Activity
	// Stats is a page of the workers (workersStatPage at most), by name:
	// WorkersCursor is the page's (?workers=, "" for the first) and
	// WorkersNext the following page's.
	Stats         []WorkerStatRow
	WorkersCursor string
	WorkersNext   string
	Outcomes      []lease.Outcome
	Now           time.Time
	// Refresh is how often the browser fetches the live leases again
	// (Deps.LiveRefresh).
	Refresh time.Duration
}

// WorkerStatRow is one worker's counts in outcome order, and its usage.
type WorkerStatRow struct {
	lease.WorkerStat
	Counts []int
	Total  int
	Usage  lease.Usage
}

// workersLeasePage is how many live leases a page of the workers page
// shows (a token may hold a thousand; the region is fetched again every
// few seconds).
const workersLeasePage = 100

// workersStatPage is how many workers a page of the workers page counts
// (every worker label that ever held a lease: there may be a hundred
// thousand).
const workersStatPage = 100

// PageURL is the workers page showing the live leases from cursor on
// ("": the first page), and the same page of workers.
func (p *WorkersPage) PageURL(cursor string) string {
	return p.url(cursor, p.WorkersCursor)
}

// WorkersURL is the workers page showing the workers from cursor on ("":
// the first page), and the same page of live leases.
func (p *WorkersPage) WorkersURL(cursor string) string {
	return p.url(p.Cursor, cursor)
}

func (p *WorkersPage) url(live, workers string) string {
	q := url.Values{}
	if live != "" {
		q.Set("live", live)
	}
	if workers != "" {
		q.Set("workers", workers)
	}
	u := "/p/" + p.Project.Name + "/workers"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// RefreshURL is the address app.js fetches this page's live leases from.
func (p *WorkersPage) RefreshURL() string {
	q := url.Values{"partial": {"leases"}}
	if p.Cursor != "" {
		q.Set("live", p.Cursor)
	}
	// The region's pager links keep the page of workers the page shows.
	if p.WorkersCursor != "" {
		q.Set("workers", p.WorkersCursor)
	}
	return "/p/" + p.Project.Name + "/workers?" + q.Encode()
}

// RefreshSeconds is Refresh in seconds, as app.js reads data-interval
// (a decimal number: "5", "0.2").
func (p *WorkersPage) RefreshSeconds() string {
	return strconv.FormatFloat(p.Refresh.Seconds(), 'f', -1, 64)
}

// Render writes the page.
func (p *WorkersPage) Render(w http.ResponseWriter) error { return render(w, "workers", p) }

// RenderLeases writes only the live leases table (refreshed by app.js).
func (p *WorkersPage) RenderLeases(w http.ResponseWriter) error {
	return renderPartial(w, "workers", "active-leases", p)
}

func (u *ui) workers(r *req) error {
	cursor := r.QueryParam("live")
	fl, err := u.Leases.FleetPage(r.ctx(), r.project.ID, cursor, workersLeasePage)
	if err != nil {
		return err
	}
	page := &WorkersPage{Outcomes: outcomes, Now: r.now(), Activity: map[uuid.UUID]lease.Activity{},
		Refresh: u.LiveRefresh, Live: fl.Total, Cursor: cursor, Next: fl.Next, WorkersCursor: r.QueryParam("workers")}
	if page.Active, err = r.withTitles(fl.Active); err != nil {
		return err
	}
	for _, a := range fl.Activity {
		page.Activity[a.LeaseID] = a
	}
	if r.QueryParam("partial") == "leases" {
		page.Layout = Layout{Session: r.sess, Project: &r.project}
		r.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
		return page.RenderLeases(r.Response())
	}
	wp, err := u.Leases.WorkersPage(r.ctx(), r.project.ID, page.WorkersCursor, workersStatPage)
	if err != nil {
		return err
	}
	page.WorkersNext = wp.Next
	for _, s := range wp.Stats {
		row := WorkerStatRow{WorkerStat: s, Usage: wp.Usage[s.Worker]}
		for _, o := range outcomes {
			row.Counts = append(row.Counts, s.Outcomes[o])
			row.Total += s.Outcomes[o]
		}
		page.Stats = append(page.Stats, row)
	}
	page.Layout = r.base("Workers", "workers")
	return r.show(page)
}

// requestStop asks the worker holding a lease to stop: it learns it on its
// next heartbeat. The lease is not pre-empted.
func (u *ui) requestStop(r *req) error {
	id, err := uuid.Parse(r.Param("id"))
	if err != nil {
		return notFoundf("no such lease")
	}
	if _, err := u.Leases.RequestStop(r.ctx(), r.project.ID, id, r.by(), ""); err != nil {
		return err
	}
	back := r.backTo(r.projectURL("/workers"))
	// The page of live leases and the page of workers the form was on
	// (their cursors, the form's "live" and "workers"), when either was
	// not the first: the cursors are looked at by the page itself, which
	// refuses one it did not write.
	if back == r.projectURL("/workers") {
		q := url.Values{}
		for _, name := range []string{"live", "workers"} {
			if v := r.FormValue(name); v != "" {
				q.Set(name, v)
			}
		}
		if len(q) > 0 {
			back += "?" + q.Encode()
		}
	}
	return r.redirect(back, "Stop requested: the worker is told on its next heartbeat.")
}
