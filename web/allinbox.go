package web

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
)

// allInboxPath is the inbox across every project an admin may see;
// allEventsPath the event stream it follows.
const (
	allInboxPath  = "/inbox"
	allEventsPath = "/events/stream"
)

// AllProjects is what the inbox shows when it spans every project an
// admin may see (/inbox): the filter's choices, each project with its open
// requests, and the project shown alone ("" for all).
type AllProjects struct {
	Projects []InboxProject
	Filter   string
	// Found: the filter names a project shown.
	Found bool
}

// InboxProject is one choice of the all-projects filter.
type InboxProject struct {
	Name string
	Open int
}

// Total is the open requests of every project.
func (a *AllProjects) Total() int {
	n := 0
	for _, p := range a.Projects {
		n += p.Open
	}
	return n
}

// FilterURL is the all-projects inbox filtered to the project name ("":
// all of them).
func (a *AllProjects) FilterURL(name string) string {
	if name == "" {
		return allInboxPath
	}
	return allInboxPath + "?" + url.Values{"project": {name}}.Encode()
}

// NextURL is the page of the all-projects inbox after the cursor, with
// the same filter.
func (a *AllProjects) NextURL(cursor string) string {
	q := url.Values{"after": {cursor}}
	if a.Filter != "" {
		q.Set("project", a.Filter)
	}
	return allInboxPath + "?" + q.Encode()
}

// allInbox serves /inbox: for an admin the requests of every project (each
// project read on its own: no statement spans projects); anyone else has
// one project and goes to its inbox.
func (u *ui) allInbox(r *req) error {
	if !r.sess.Principal.IsAdmin() {
		return u.home(r)
	}
	projects, err := u.Graph.ListProjects(r.ctx())
	if err != nil {
		return err
	}
	all := &AllProjects{Filter: r.QueryParam("project")}
	page := &InboxPage{AllProjects: all}
	var shown []graph.Project
	for _, p := range projects {
		if !r.sess.Principal.CanSee(p.ID) {
			continue
		}
		n, err := u.Attention.CountOpen(r.ctx(), p.ID)
		if err != nil {
			return err
		}
		all.Projects = append(all.Projects, InboxProject{Name: p.Name, Open: n})
		if all.Filter != "" && all.Filter != p.Name {
			continue
		}
		page.Open += n
		if n > 0 {
			shown = append(shown, p)
		}
		if all.Filter != "" {
			all.Found = true
		}
	}
	if all.Filter != "" && !all.Found {
		return r.fail(http.StatusNotFound, "Not found", "There is no such project, or it is not yours.")
	}
	if err := r.inboxPage(page, shown, r.QueryParam("after")); err != nil {
		return err
	}
	if id, err := uuid.Parse(r.QueryParam("answered")); err == nil {
		if p, err := u.Graph.Project(r.ctx(), r.QueryParam("in")); err == nil && r.sess.Principal.CanSee(p.ID) {
			page.Answered = r.in(p).answeredNote(id)
		}
	}
	page.Layout = r.base("Inbox: all projects", "all-inbox")
	if u.Events != nil {
		page.StreamURL = allEventsPath
	}
	if err := page.fit(); err != nil {
		return err
	}
	return r.show(page)
}

// in is r acting inside project p (the all-projects inbox reads each
// project through it).
func (r *req) in(p graph.Project) *req {
	c := *r
	c.project = p
	return &c
}
