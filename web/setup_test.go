package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/session"
	"github.com/workgraph-dev/workgraph/web"
	"github.com/workgraph-dev/workgraph/webhook"
)

// env is a UI served by httptest on a fresh database, with a project and
// tokens of every role.
type env struct {
	t       *testing.T
	srv     *httptest.Server
	pool    *pgxpool.Pool
	auth    *auth.Service
	graph   *graph.Service
	leases  *lease.Service
	att     *attention.Service
	draw    *web.Drawings
	hooks   *webhook.Service
	links   *webhook.AnswerLinks
	project graph.Project
	human   string // bearer tokens
	agent   string
	admin   string
}

// setup builds the env; each option may change the UI's Deps before they
// are mounted (e.g. a stub display clock).
func setup(t *testing.T, opts ...func(*web.Deps)) *env {
	t.Helper()
	pool := dbtest.New(t)
	e := &env{
		t: t, pool: pool,
		auth:   auth.NewService(pool, nil),
		graph:  graph.NewService(pool, nil),
		leases: lease.NewService(pool, nil, lease.Config{}),
		att:    attention.NewService(pool, nil, attention.Config{}),
		draw:   web.NewDrawings(web.DrawLimits{}),
		hooks:  webhook.NewService(pool, nil, false),
	}
	e.links = webhook.NewAnswerLinks(pool, nil, e.att)
	ctx := context.Background()
	var err error
	if e.project, err = e.graph.CreateProject(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for role, dst := range map[auth.Role]*string{auth.RoleHuman: &e.human, auth.RoleAgent: &e.agent, auth.RoleAdmin: &e.admin} {
		if _, *dst, err = e.auth.Create(ctx, &e.project.ID, "t-"+string(role), role); err != nil {
			t.Fatal(err)
		}
	}
	ec := echo.New()
	deps := web.Deps{Sessions: session.NewStore(pool, nil), Auth: e.auth, Graph: e.graph, Leases: e.leases, Attention: e.att, Drawings: e.draw,
		Webhooks: e.hooks, Links: e.links}
	for _, o := range opts {
		o(&deps)
	}
	if deps.Events == liveEvents {
		follower := events.NewFollower(pool, 0, nil)
		follower.Start(ctx)
		t.Cleanup(follower.Stop)
		deps.Events = events.NewReader(pool, follower)
	}
	// The test's connections (from loopback) come as from a trusted proxy,
	// as the server records for every request: a test that sends
	// X-Forwarded-Proto is behind a TLS proxy (server's
	// TestSecureCookieTrustedProxy holds the untrusted peer).
	loopback, err := auth.ParseProxies("127.0.0.1, ::1")
	if err != nil {
		t.Fatal(err)
	}
	ec.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.SetRequest(auth.WithClient(c.Request(), loopback))
			return next(c)
		}
	})
	web.Mount(ec, deps)
	e.srv = httptest.NewServer(ec)
	t.Cleanup(e.srv.Close)
	return e
}

// liveEvents, as an option's Deps.Events, asks setup for the event log's
// reader on the env's database, its follower running (pages stream).
var liveEvents = new(events.Reader)

// live is the option of a UI whose pages stream the event log.
func live(d *web.Deps) { d.Events = liveEvents }

// browser is a cookie-keeping client that does not follow redirects, so
// tests see every 303.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type response struct {
	*http.Response
	body string
}

func (b *browser) do(req *http.Request) response {
	b.e.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindStringSubmatch(string(body)); m != nil {
		b.csrf = m[1]
	}
	return response{resp, string(body)}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) get(path string) response {
	req, _ := http.NewRequest(http.MethodGet, b.e.srv.URL+path, nil)
	return b.do(req)
}

// post submits a form as a same-origin browser would, with the CSRF token
// of the last page unless form sets one.
func (b *browser) post(path string, form url.Values, header ...string) response {
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return b.do(req)
}

// signIn signs in with the token and loads the inbox (for its CSRF token).
func (e *env) signIn(token string) *browser {
	e.t.Helper()
	b := e.browser()
	b.get("/signin")
	r := b.post("/signin", url.Values{"token": {token}, "next": {"/"}})
	if r.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign in: status %d\n%s", r.StatusCode, r.body)
	}
	if r := b.get("/p/acme/inbox"); r.StatusCode != http.StatusOK {
		e.t.Fatalf("inbox after sign-in: status %d", r.StatusCode)
	}
	return b
}

func (e *env) mustItem(title string, deps ...uuid.UUID) graph.Item {
	e.t.Helper()
	it, err := e.graph.CreateItem(context.Background(), e.project.ID, graph.NewItem{Title: title, DependsOn: deps, CreatedBy: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return it
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d\n%.2000s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
}

func wantBody(t *testing.T, r response, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.body, p) {
			t.Errorf("%s: body lacks %q", r.Request.URL.Path, p)
		}
	}
}

// claimAndAsk claims the next ready item as worker and asks q on its
// lease; it answers the claim and the request opened.
func (e *env) claimAndAsk(worker string, q attention.NewRequest) (lease.Claim, attention.Request) {
	e.t.Helper()
	ctx := context.Background()
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: worker})
	if err != nil {
		e.t.Fatalf("claim as %s: %v", worker, err)
	}
	res, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, q)
	if err != nil {
		e.t.Fatalf("ask as %s: %v", worker, err)
	}
	return c, res.Request
}
