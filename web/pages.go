package web

import (
	"net/http"
	"time"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/webhook"
)

// Layout is what every page shows around its content: the top bar with the
// project's navigation and live counters, the signed-in person, a one-time
// message.
type Layout struct {
	Title         string
	Nav           string // the active navigation entry
	Session       *signedIn
	Project       *graph.Project
	OpenAttention int
	ActiveLeases  int
	Flash         string
	FlashError    bool
	// Now is the instant the page's times are shown against (relative
	// times; sent as <html data-now> so reltime.js keeps to it).
	Now time.Time
	// DisabledWebhooks are the project's webhooks that delivery disabled
	// after a day of failures (shown to admins and humans as a notice).
	DisabledWebhooks []webhook.Webhook
	// WebhooksLink: the signed-in principal may manage the project's
	// webhooks (the navigation links their page).
	WebhooksLink bool
	// StreamURL is the event stream a page without a project follows
	// (an admin's inbox across projects); "" for none. A project's pages
	// follow their project's.
	StreamURL string
}

// ErrorPage explains why a request failed.
type ErrorPage struct {
	Layout
	Heading string
	Message string
	// Links are where the person may have meant to go (the items whose
	// ids start with what they typed), listed under the message.
	Links []Link
	Back  string
}

// Link is a page to go to, named for a person.
type Link struct {
	URL, Text string
}

// Render writes the page.
func (p *ErrorPage) Render(w http.ResponseWriter) error { return render(w, "error", p) }

// SigninPage is the sign-in form.
type SigninPage struct {
	Layout
	SigninCSRF string
	Next       string
	Error      string
}

// Render writes the page.
func (p *SigninPage) Render(w http.ResponseWriter) error { return render(w, "signin", p) }

// ProjectsPage lists the projects an admin may open.
type ProjectsPage struct {
	Layout
	Projects []graph.Project
}

// Render writes the page.
func (p *ProjectsPage) Render(w http.ResponseWriter) error { return render(w, "projects", p) }
