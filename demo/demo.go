// Package demo loads a small sample project, "demo", so that a newcomer who
// runs `workgraph serve --demo` sees every page of the web UI filled: a plan
// with dependencies, a decomposed item with children, an open attention
// request raised by a simulated agent, and lease history with completed,
// failed, expired, released and decomposed leases, a refused stale report
// and a live lease.
//
// Everything goes through the domain services (graph, lease, attention), as
// an agent's calls would. Time is a stub clock that starts three hours ago
// and moves forward between steps, so the history spans hours without any
// waiting; lease expiry is decided by that clock like any other.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Project is the name of the demo project.
const Project = "demo"

// Result says what Load did.
type Result struct {
	// Loaded is false when the project already existed (nothing changed).
	Loaded bool
	// Token is the bearer of a human token of the demo project, created by
	// this load (shown once; empty when Loaded is false).
	Token string
}

// Load creates the demo project unless a project named "demo" exists. It is
// not one transaction (it makes the calls an agent would make); a load
// interrupted halfway leaves a partial demo project, which is never
// reloaded (delete the database to start over).
func Load(ctx context.Context, pool *pgxpool.Pool, authSvc *auth.Service) (Result, error) {
	start := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	clk := clock.NewStub(start)
	l := &loader{
		clk:    clk,
		graph:  graph.NewService(pool, clk),
		leases: lease.NewService(pool, clk, lease.Config{}),
		att:    attention.NewService(pool, clk, attention.Config{}),
		start:  start,
	}
	p, err := l.graph.CreateProject(ctx, Project)
	if errors.Is(err, wgerr.AlreadyExists) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("demo: %w", err)
	}
	l.project = p.ID
	if err := l.load(ctx); err != nil {
		return Result{}, fmt.Errorf("demo: %w", err)
	}
	_, bearer, err := authSvc.Create(ctx, &p.ID, "demo-person", auth.RoleHuman)
	if err != nil {
		return Result{}, fmt.Errorf("demo: token: %w", err)
	}
	return Result{Loaded: true, Token: bearer}, nil
}

type loader struct {
	clk     *clock.Stub
	graph   *graph.Service
	leases  *lease.Service
	att     *attention.Service
	project uuid.UUID
	start   time.Time
	items   map[string]uuid.UUID
}

// at moves the demo clock to start+d.
func (l *loader) at(d time.Duration) { l.clk.Set(l.start.Add(d)) }

const planner = "token:demo-planner"

func (l *loader) item(ctx context.Context, key string, in graph.NewItem, deps ...string) error {
	in.CreatedBy = planner
	for _, d := range deps {
		in.DependsOn = append(in.DependsOn, l.items[d])
	}
	it, err := l.graph.CreateItem(ctx, l.project, in)
	if err != nil {
		return fmt.Errorf("item %s: %w", key, err)
	}
	l.items[key] = it.ID
	return nil
}

// claim claims the next ready item as worker and checks that it is the one
// the story expects.
func (l *loader) claim(ctx context.Context, worker, want string, ttl time.Duration) (lease.Fence, error) {
	c, err := l.leases.Claim(ctx, l.project, lease.ClaimRequest{Worker: worker, TTL: ttl, Principal: "token:" + worker})
	if err != nil {
		return lease.Fence{}, fmt.Errorf("claim for %s: %w", want, err)
	}
	if c.Item.ID != l.items[want] {
		return lease.Fence{}, fmt.Errorf("claim for %s got %q instead", want, c.Item.Title)
	}
	return lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, nil
}

func (l *loader) heartbeat(ctx context.Context, f lease.Fence, progress string) error {
	p, _ := json.Marshal(map[string]string{"note": progress})
	_, err := l.leases.Heartbeat(ctx, l.project, f, lease.Heartbeat{Progress: p})
	return err
}

func (l *loader) complete(ctx context.Context, f lease.Fence, result map[string]any) error {
	r, _ := json.Marshal(result)
	_, err := l.leases.Complete(ctx, l.project, f, r, nil)
	return err
}

func (l *loader) load(ctx context.Context) error {
	l.items = map[string]uuid.UUID{}
	m := time.Minute
	l.at(0)
	// The plan: launch a documentation site. Priorities decide which item
	// each simulated claim gets, so the story below is deterministic.
	steps := []struct {
		key  string
		in   graph.NewItem
		deps []string
	}{
		{"api", graph.NewItem{Title: "Write the API walkthrough", Priority: 50, Labels: []string{"docs"},
			Body: "Walk an agent author through the API with `curl`: create an item, claim it, heartbeat, complete.\n\n- one page, copy-pasteable\n- every error code once"}, nil},
		{"ssg", graph.NewItem{Title: "Set up the static site generator", Priority: 40, Labels: []string{"site"},
			Body: "Pick a generator that builds from plain markdown and deploys from CI. **No JavaScript build step.**"}, nil},
		{"ref", graph.NewItem{Title: "Generate the API reference from OpenAPI", Priority: 30, Labels: []string{"docs", "flaky"},
			Body: "Render `/v1/openapi.json` into reference pages at build time."}, nil},
		{"landing", graph.NewItem{Title: "Design the landing page", Priority: 20, Labels: []string{"design"},
			Body: "Hero, three feature blocks, a quick start. Follow the brand guide."}, []string{"ssg"}},
		{"wiki", graph.NewItem{Title: "Migrate the old wiki", Priority: 10, Labels: []string{"docs"},
			Body: "About 140 pages in the old wiki. Move what is still true; drop the rest."}, []string{"ssg"}},
		{"search", graph.NewItem{Title: "Add search to the docs", Labels: []string{"site"},
			Body: "Client-side index built at deploy time."}, nil},
		{"changelog", graph.NewItem{Title: "Write a changelog page", Labels: []string{"docs"}}, nil},
		{"theme", graph.NewItem{Title: "Evaluate a second theme", Labels: []string{"design"}}, nil},
		{"publish", graph.NewItem{Title: "Publish the site", Priority: 5, Labels: []string{"site"},
			Body: "Point `docs.example.com` at the build, check every link, turn on the CDN."}, []string{"api", "ref", "landing", "wiki"}},
		{"announce", graph.NewItem{Title: "Announce the launch", Labels: []string{"comms"},
			Body: "Blog post and a note to the mailing list."}, []string{"publish", "search"}},
	}
	for _, s := range steps {
		if err := l.item(ctx, s.key, s.in, s.deps...); err != nil {
			return err
		}
	}

	// claude-1 writes the walkthrough.
	l.at(2 * m)
	api, err := l.claim(ctx, "claude-1", "api", 20*m)
	if err != nil {
		return err
	}
	// codex-2 sets up the generator meanwhile.
	l.at(5 * m)
	ssg, err := l.claim(ctx, "codex-2", "ssg", 45*m)
	if err != nil {
		return err
	}
	for i, d := range []time.Duration{12 * m, 24 * m} {
		l.at(d)
		if err := l.heartbeat(ctx, api, fmt.Sprintf("section %d of 3 drafted", i+1)); err != nil {
			return err
		}
	}
	l.at(31 * m)
	if err := l.complete(ctx, api, map[string]any{"pages": 1, "pull_request": "https://git.example.com/docs/pull/41"}); err != nil {
		return err
	}
	l.at(35 * m)
	ref, err := l.claim(ctx, "claude-1", "ref", 20*m)
	if err != nil {
		return err
	}
	l.at(40 * m)
	if err := l.heartbeat(ctx, ssg, "theme configured, CI job green"); err != nil {
		return err
	}
	l.at(48 * m)
	if err := l.complete(ctx, ssg, map[string]any{"generator": "hugo", "ci": "pages.yml"}); err != nil {
		return err
	}
	// The reference generator fails once...
	l.at(52 * m)
	if _, err := l.leases.Fail(ctx, l.project, ref, lease.Failure{Message: "openapi renderer crashed on a nullable enum (schema Item.state)"}); err != nil {
		return err
	}
	// ...and codex-2's retry goes silent and expires.
	l.at(55 * m)
	ref2, err := l.claim(ctx, "codex-2", "ref", 15*m)
	if err != nil {
		return err
	}
	l.at(60 * m)
	if err := l.heartbeat(ctx, ref2, "patched the enum, rebuilding"); err != nil {
		return err
	}
	l.at(77 * m)
	if _, err := l.leases.ReapExpired(ctx, l.project, 0); err != nil {
		return err
	}
	// claude-1 takes it over for the long haul (still running now).
	l.at(78 * m)
	ref3, err := l.claim(ctx, "claude-1", "ref", 4*time.Hour)
	if err != nil {
		return err
	}
	// The silent worker wakes up and reports late: refused, and recorded.
	l.at(80 * m)
	if err := l.heartbeat(ctx, ref2, "rebuild finished"); !errors.Is(err, wgerr.LeaseLost) {
		return fmt.Errorf("stale heartbeat: got %v, want lease_lost", err)
	}
	// gemini-3 designs the landing page and needs a person's decision.
	l.at(82 * m)
	landing, err := l.claim(ctx, "gemini-3", "landing", 20*m)
	if err != nil {
		return err
	}
	l.at(95 * m)
	ctxJSON, _ := json.Marshal(map[string]any{"brand_guide": "v3, page 12", "drafts": []string{"hero-split.png", "hero-centered.png"}})
	if _, err := l.leases.Ask(ctx, l.project, landing, attention.NewRequest{
		Question: "The brand guide allows two hero layouts and I have drafted both.\n\n" +
			"- **Split**: headline left, product screenshot right\n- **Centered**: headline and quick start only, no image\n\n" +
			"Which one should the landing page use?",
		SuggestedAnswers: []string{"Split hero with screenshot", "Centered hero, text only"},
		Context:          ctxJSON,
		Blocking:         true,
	}); err != nil {
		return err
	}
	// codex-2 splits the wiki migration into steps and does the first.
	l.at(100 * m)
	wiki, err := l.claim(ctx, "codex-2", "wiki", 20*m)
	if err != nil {
		return err
	}
	l.at(110 * m)
	dec, err := l.leases.Decompose(ctx, l.project, wiki, []graph.NewChild{
		{Key: "export", Title: "Export wiki pages to markdown", Priority: 8, Labels: []string{"docs"}},
		{Key: "links", Title: "Fix broken internal links", Labels: []string{"docs"}, DependsOnKeys: []string{"export"}},
		{Key: "redirects", Title: "Redirect old wiki URLs", Labels: []string{"site"}, DependsOnKeys: []string{"links"}},
	})
	if err != nil {
		return err
	}
	l.items["export"] = dec.Children[0].ID
	l.at(112 * m)
	export, err := l.claim(ctx, "codex-2", "export", 30*m)
	if err != nil {
		return err
	}
	l.at(125 * m)
	if err := l.heartbeat(ctx, export, "96 of 140 pages exported"); err != nil {
		return err
	}
	l.at(126 * m)
	if err := l.heartbeat(ctx, ref3, "rendered 17 of 38 schemas"); err != nil {
		return err
	}
	l.at(140 * m)
	if err := l.complete(ctx, export, map[string]any{"exported": 131, "dropped_as_outdated": 9}); err != nil {
		return err
	}
	// gemini-3 picks up search but hands it back.
	l.at(150 * m)
	search, err := l.claim(ctx, "gemini-3", "search", 20*m)
	if err != nil {
		return err
	}
	l.at(158 * m)
	if _, err := l.leases.Release(ctx, l.project, search, "context window nearly full; handing back"); err != nil {
		return err
	}
	// A person drops the second theme.
	l.at(165 * m)
	if _, err := l.graph.Cancel(ctx, l.project, l.items["theme"], "token:demo-person", "one theme is enough for launch"); err != nil {
		return err
	}
	// The long-running lease keeps heartbeating.
	l.at(175 * m)
	return l.heartbeat(ctx, ref3, "rendered 31 of 38 schemas")
}
