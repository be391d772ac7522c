package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// setID gives an item an id of the test's choosing (a fresh database: the
// item has no edges, leases or requests yet).
func (e *env) setID(it *client.Item, id string) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE items SET id = $1 WHERE id = $2`, id, it.ID); err != nil {
		e.t.Fatalf("set the id of %q: %v", it.Title, err)
	}
	it.ID = id
}

// TestIDPrefixes types the first characters of ids, as a person copies them
// from a table or a page, into every command that takes one.
func TestIDPrefixes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OKItems", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		a, b := e.item("Write the migration"), e.item("Add the endpoint")
		e.setID(a, "abcd1234-0000-4000-8000-000000000001")
		e.setID(b, "abcd1234-9999-4000-8000-000000000002")
		c := e.item("Ship it")

		show := e.run(e.agentToken, nil, "items", "show", "abcd1234-0")
		if show.code != 0 || !strings.Contains(show.stdout, a.ID) || !strings.Contains(show.stdout, "Write the migration") {
			t.Fatalf("items show abcd1234-0: %v", show)
		}
		if r := e.run(e.agentToken, nil, "deps", "add", c.ID[:8], "ABCD12349"); r.code != 0 || !strings.Contains(r.stdout, b.ID) {
			t.Fatalf("deps add by prefixes: %v", r)
		}
		if got := e.get(c.ID); got.State != client.StateBlocked {
			t.Fatalf("c after deps add by prefixes: %s, want blocked", got.State)
		}
		if r := e.run(e.humanToken, nil, "deps", "rm", c.ID[:8], "abcd1234-99"); r.code != 0 {
			t.Fatalf("deps rm by prefixes: %v", r)
		}
		var d client.Item
		e.mustJSON(e.agentToken, &d, "items", "add", "Write the docs", "--parent", c.ID[:8], "--depends-on", "abcd12340")
		if d.ParentID == nil || *d.ParentID != c.ID || d.State != client.StateBlocked {
			t.Fatalf("items add --parent/--depends-on by prefixes: %+v", d)
		}
		if ls := e.run(e.agentToken, nil, "items", "ls", "--parent", c.ID[:8]); ls.code != 0 || !strings.Contains(ls.stdout, d.ID) {
			t.Fatalf("items ls --parent by prefix: %v", ls)
		}
		if r := e.run(e.humanToken, nil, "items", "edit", d.ID[:8], "--priority", "7"); r.code != 0 || e.get(d.ID).Priority != 7 {
			t.Fatalf("items edit by prefix: %v", r)
		}
		if r := e.run(e.humanToken, nil, "items", "cancel", d.ID[:8]); r.code != 0 || e.get(d.ID).State != client.StateCancelled {
			t.Fatalf("items cancel by prefix: %v", r)
		}
	})

	t.Run("ErrAmbiguous", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		a, b := e.item("Write the migration"), e.item("Add the endpoint")
		e.setID(a, "abcd1234-0000-4000-8000-000000000001")
		e.setID(b, "abcd1234-9999-4000-8000-000000000002")
		before := e.get(a.ID)
		r := e.wantExit(e.humanToken, 2, "ambiguous", "items", "cancel", "abcd1234")
		for _, want := range []string{a.ID, "Write the migration", b.ID, "Add the endpoint", "type more"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the ambiguous prefix's error lacks %q:\n%s", want, r.stderr)
			}
		}
		if got := e.get(a.ID); got.State != before.State || got.Version != before.Version {
			t.Fatalf("an ambiguous cancel changed the item: %+v", got)
		}
		e.wantExit(e.agentToken, 5, `no item id starts with "ffff0000"`, "items", "show", "ffff0000")
		e.wantExit(e.agentToken, 2, "at least 4 hex digits", "items", "show", "c53")
		e.wantExit(e.agentToken, 2, "at least 4 hex digits", "items", "show", "not-an-id")
	})

	t.Run("OKLeasesAttentionTokens", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		it := e.item("Decide the colour")
		cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		epoch := strconv.FormatInt(cl.Lease.Epoch, 10)
		if r := e.run(e.agentToken, nil, "heartbeat", "--lease-id", cl.Lease.ID[:8], "--epoch", epoch); r.code != 0 {
			t.Fatalf("heartbeat --lease-id by prefix: %v", r)
		}
		if h := e.run(e.agentToken, nil, "history", "--item", it.ID[:8]); h.code != 0 || !strings.Contains(h.stdout, cl.Lease.ID) {
			t.Fatalf("history --item by prefix: %v", h)
		}
		blocking := true
		ask, err := e.agent.Ask(ctx, cl.Lease.ID, client.AskRequest{Epoch: cl.Lease.Epoch, Question: "Blue or green?", Blocking: &blocking})
		if err != nil {
			t.Fatal(err)
		}
		if ls := e.run(e.humanToken, nil, "attention", "ls", "--item", it.ID[:8]); ls.code != 0 || !strings.Contains(ls.stdout, ask.Attention.ID) {
			t.Fatalf("attention ls --item by prefix: %v", ls)
		}
		if r := e.run(e.humanToken, nil, "attention", "resolve", ask.Attention.ID[:8], "green"); r.code != 0 {
			t.Fatalf("attention resolve by prefix: %v", r)
		}
		if got := e.get(it.ID); got.State != client.StateReady {
			t.Fatalf("the item after the answer: %s, want ready", got.State)
		}

		tk, err := e.admin.CreateToken(ctx, e.project, client.CreateTokenRequest{Name: "doomed", Role: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		// Only an admin may name tokens: to others no token id matches.
		e.wantExit(e.humanToken, 5, "no token id starts with", "tokens", "revoke", tk.ID[:8])
		if r := e.run(adminToken, nil, "tokens", "revoke", tk.ID[:8]); r.code != 0 || !strings.Contains(r.stdout, tk.ID) {
			t.Fatalf("tokens revoke by prefix: %v", r)
		}
	})
}

// TestMissingProject: with a bootstrap token there is no project "default";
// the first command of a new user names the projects the token can see and
// how to pick one.
func TestMissingProject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	unset := []string{"WORKGRAPH_PROJECT="}
	r := e.run(e.agentToken, unset, "items", "ls")
	for _, want := range []string{`project "default" not found (from default)`, "projects this token can see: e2e", "--project e2e", "WORKGRAPH_PROJECT=e2e", "project: e2e"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("items ls without a project: stderr lacks %q\n%v", want, r)
		}
	}
	if r.code != 5 {
		t.Errorf("items ls without a project: exit %d, want 5", r.code)
	}
	// A missing item is still a missing item, not a missing project.
	e.wantExit(e.agentToken, 5, "check the id and the project", "items", "show", "00000000-0000-0000-0000-000000000000")
	// The admin token sees every project.
	if _, err := e.admin.CreateProject(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	e.wantExit(adminToken, 5, "projects this token can see: e2e other", "--project", "nope", "claim")
}

// TestSortedLists: `history` shows the newest lease first, `--sort` orders
// it and `items ls` otherwise, through the API's sort parameter.
func TestSortedLists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	low, high := e.item("low item"), e.item("high item")
	prio := 9
	if _, err := e.human.UpdateItem(ctx, e.project, high.ID, client.UpdateItemRequest{Priority: &prio}); err != nil {
		t.Fatal(err)
	}
	var leases []string
	for range 2 {
		cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.agent.Release(ctx, cl.Lease.ID, client.ReleaseRequest{Epoch: cl.Lease.Epoch}); err != nil {
			t.Fatal(err)
		}
		leases = append(leases, cl.Lease.ID)
	}
	before := func(out, a, b string) bool {
		i, j := strings.Index(out, a), strings.Index(out, b)
		return i >= 0 && j >= 0 && i < j
	}
	if h := e.run(e.humanToken, nil, "history"); h.code != 0 || !before(h.stdout, leases[1], leases[0]) {
		t.Errorf("history: want the newest lease first\n%v", h)
	}
	if h := e.run(e.humanToken, nil, "history", "--sort", "acquired"); h.code != 0 || !before(h.stdout, leases[0], leases[1]) {
		t.Errorf("history --sort acquired: want the oldest first\n%v", h)
	}
	if ls := e.run(e.agentToken, nil, "items", "ls"); ls.code != 0 || !before(ls.stdout, low.ID, high.ID) {
		t.Errorf("items ls: want creation order\n%v", ls)
	}
	if ls := e.run(e.agentToken, nil, "items", "ls", "--sort", "-priority"); ls.code != 0 || !before(ls.stdout, high.ID, low.ID) {
		t.Errorf("items ls --sort -priority: want the high priority first\n%v", ls)
	}
	e.wantExit(e.agentToken, 2, "sort", "items", "ls", "--sort", "title")
}
