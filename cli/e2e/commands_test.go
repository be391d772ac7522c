package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// mustJSON runs the binary with --json and decodes its output into v.
func (e *env) mustJSON(token string, v any, args ...string) {
	e.t.Helper()
	r := e.run(token, nil, append(args, "--json")...)
	if r.code != 0 {
		e.t.Fatalf("workgraph %s: %v", strings.Join(args, " "), r)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		e.t.Fatalf("workgraph %s --json: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

func (e *env) wantExit(token string, code int, hint string, args ...string) result {
	e.t.Helper()
	r := e.run(token, nil, args...)
	if r.code != code || !strings.Contains(r.stderr, hint) {
		e.t.Fatalf("workgraph %s: want exit %d and %q\n%v", strings.Join(args, " "), code, hint, r)
	}
	return r
}

func TestCommands(t *testing.T) {
	t.Parallel()
	// One server for the subtests that need a project of their own, not a
	// server (OKAdmin's is the usual "e2e"); OKConfigFile has its own.
	srv := boot(t)
	t.Run("OKItemsAndDeps", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKItemsAndDeps")
		var a, b client.Item
		e.mustJSON(e.agentToken, &a, "items", "add", "Write the migration", "--priority", "5", "--label", "db", "--body", "Add the table.")
		e.mustJSON(e.agentToken, &b, "items", "add", "Add the endpoint", "--depends-on", a.ID)
		if a.Priority != 5 || len(a.Labels) != 1 || b.State != client.StateBlocked {
			t.Fatalf("a = %+v, b = %+v", a, b)
		}
		// A cycle is refused with exit 6 and nothing changes.
		e.wantExit(e.agentToken, 6, "cycle", "deps", "add", a.ID, b.ID)
		if got := e.get(a.ID); got.State != client.StateReady {
			t.Fatalf("a after the refused cycle: %s", got.State)
		}
		ls := e.run(e.agentToken, nil, "items", "ls", "--state", "blocked")
		if ls.code != 0 || !strings.Contains(ls.stdout, b.ID) || strings.Contains(ls.stdout, a.ID) || !strings.Contains(ls.stdout, "STATE") {
			t.Fatalf("items ls: %v", ls)
		}
		show := e.run(e.agentToken, nil, "items", "show", b.ID)
		if show.code != 0 || !strings.Contains(show.stdout, "blocked by") || !strings.Contains(show.stdout, a.ID) {
			t.Fatalf("items show: %v", show)
		}
		if r := e.run(e.humanToken, nil, "deps", "rm", b.ID, a.ID); r.code != 0 {
			t.Fatalf("deps rm: %v", r)
		}
		if got := e.get(b.ID); got.State != client.StateReady {
			t.Fatalf("b after removing its dependency: %s", got.State)
		}
		if r := e.run(e.humanToken, nil, "items", "edit", b.ID, "--title", "Add the endpoint (v2)", "--priority", "9"); r.code != 0 {
			t.Fatalf("items edit: %v", r)
		}
		if got := e.get(b.ID); got.Title != "Add the endpoint (v2)" || got.Priority != 9 {
			t.Fatalf("b after edit: %+v", got)
		}
		if r := e.run(e.humanToken, nil, "items", "cancel", a.ID); r.code != 0 {
			t.Fatalf("items cancel: %v", r)
		}
		if got := e.get(a.ID); got.State != client.StateCancelled {
			t.Fatalf("a after cancel: %s", got.State)
		}
		e.wantExit(e.agentToken, 5, "not found", "items", "show", "00000000-0000-0000-0000-000000000000")
		e.wantExit(e.agentToken, 7, "forbidden", "items", "cancel", b.ID)
	})
	t.Run("ErrConflictHintsSayWhatIsTrue", func(t *testing.T) {
		// A refusal that the same request would meet again is not met
		// with "retry": cancelling an ended item, editing a finished
		// one, removing a dependency that is not there. The hints used
		// to tell the user to retry, or to check the ids and project.
		t.Parallel()
		e := srv.inProject(t, "ErrConflictHintsSayWhatIsTrue")
		a, b := e.item("prerequisite"), e.item("waiter")
		if r := e.run(e.humanToken, nil, "items", "cancel", a.ID); r.code != 0 {
			t.Fatalf("items cancel: %v", r)
		}
		for _, c := range []struct {
			code int
			hint string
			args []string
		}{
			{6, "there is nothing to cancel", []string{"items", "cancel", a.ID}},
			{6, "only its labels can still change", []string{"items", "edit", a.ID, "--title", "again"}},
			{5, "nothing to remove", []string{"deps", "rm", b.ID, a.ID}},
		} {
			r := e.wantExit(e.humanToken, c.code, c.hint, c.args...)
			if strings.Contains(r.stderr, "retry") || strings.Contains(r.stderr, "check the id and the project") {
				t.Errorf("workgraph %s: the hint sends the user to retry or to check ids:\n%s", strings.Join(c.args, " "), r.stderr)
			}
		}
	})
	t.Run("OKLeaseCommands", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKLeaseCommands")
		it := e.item("by hand")
		r := e.wantExit(e.agentToken, 3, "nothing is ready", "claim", "--labels", "no-such-label")
		if !strings.Contains(r.stderr, "--wait 30s") {
			t.Errorf("a claim that did not wait is not told it may: %s", r.stderr)
		}
		// One that waited is told so, not to wait (as it just did).
		r = e.wantExit(e.agentToken, 3, "nothing became ready within --wait 1s", "claim", "--labels", "no-such-label", "--wait", "1s")
		if strings.Contains(r.stderr, "--wait 30s") {
			t.Errorf("a claim that waited is told to wait: %s", r.stderr)
		}
		var cl client.Claim
		e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1", "--lease", "1m")
		if cl.Item.ID != it.ID || cl.Lease.Epoch != 1 || cl.Lease.Worker != "w1" {
			t.Fatalf("claim = %+v", cl.Lease)
		}
		fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
		stale := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=7"}
		if r := e.run(e.agentToken, fence, "heartbeat", "--progress", "half way"); r.code != 0 || !strings.Contains(r.stdout, "extended until") {
			t.Fatalf("heartbeat: %v", r)
		}
		// An epoch the lease was never granted at: the server's lease_lost
		// is the caller's input (exit 2, fix the input), not a lost lease
		// (exit 4, stop working): the hint says the pair is mismatched and
		// nothing changed, not that the item was taken (the lease may
		// still be live and the caller's). A complete alike.
		for _, cmd := range [][]string{{"heartbeat"}, {"complete", "--result", `{"pr": 41}`}} {
			if r := e.run(e.agentToken, stale, cmd...); r.code != 2 ||
				!strings.Contains(r.stderr, "the lease id and the epoch are of different claims") ||
				!strings.Contains(r.stderr, "nothing was changed") {
				t.Fatalf("stale %s: %v", cmd[0], r)
			}
		}
		if r := e.run(e.agentToken, fence, "complete", "--result", "not json"); r.code != 2 {
			t.Fatalf("complete with bad JSON: %v", r)
		}
		if r := e.run(e.agentToken, fence, "complete", "--result", `{"pr": 42}`); r.code != 0 {
			t.Fatalf("complete: %v", r)
		}
		if r := e.run(e.agentToken, fence, "complete", "--result", `{"pr": 42}`); r.code != 0 || !strings.Contains(r.stdout, "replay") {
			t.Fatalf("repeated complete: %v", r)
		}
		if r := e.run(e.agentToken, fence, "complete", "--result", `{"pr": 43}`); r.code != 6 || !strings.Contains(r.stderr, "first result stands") {
			t.Fatalf("conflicting complete: %v", r)
		}
		if got := e.get(it.ID); got.State != client.StateDone || string(got.Result) != `{"pr": 42}` && string(got.Result) != `{"pr":42}` {
			t.Fatalf("item = %s %s", got.State, got.Result)
		}
		h := e.run(e.humanToken, nil, "history", "--item", it.ID)
		if h.code != 0 || !strings.Contains(h.stdout, "completed") || !strings.Contains(h.stdout, "w1") {
			t.Fatalf("history: %v", h)
		}
	})
	t.Run("OKFailReleaseDecompose", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKFailReleaseDecompose")
		it := e.item("to split")
		var cl client.Claim
		e.mustJSON(e.agentToken, &cl, "claim")
		fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
		if r := e.run(e.agentToken, fence, "release", "--reason", "not now"); r.code != 0 {
			t.Fatalf("release: %v", r)
		}
		e.mustJSON(e.agentToken, &cl, "claim")
		fence = []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=2"}
		children := filepath.Join(t.TempDir(), "children.yaml")
		os.WriteFile(children, []byte("- key: a\n  title: Part A\n- key: b\n  title: Part B\n  depends_on: [a]\n"+
			"  requires: [go]\n  touches: [\"repo:web/**\"]\n"), 0o600)
		if r := e.run(e.agentToken, fence, "decompose", children); r.code != 0 || !strings.Contains(r.stdout, "Part B") {
			t.Fatalf("decompose: %v", r)
		}
		got := e.get(it.ID)
		if got.State != client.StateBlocked || len(got.BlockedBy.Children) != 2 {
			t.Fatalf("parent after decompose: %+v", got)
		}
		if b := e.get(got.BlockedBy.Children[1].ID); b.Title != "Part B" || len(b.Requires) != 1 || b.Requires[0] != "go" ||
			len(b.Touches) != 1 || b.Touches[0] != "repo:web/**" {
			t.Fatalf("Part B: %q requires %v touches %v, want [go] [repo:web/**]", b.Title, b.Requires, b.Touches)
		}
		// Part A is next; fail it.
		e.mustJSON(e.agentToken, &cl, "claim")
		if cl.Item.Title != "Part A" {
			t.Fatalf("claimed %q, want Part A", cl.Item.Title)
		}
		fence = []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
		if r := e.run(e.agentToken, fence, "fail", "could not compile", "--details", `{"log": "..."}`); r.code != 0 ||
			!strings.Contains(r.stdout, "failed; it will be retried after ") {
			t.Fatalf("fail: want exit 0 and when the item is retried: %v", r)
		}
		ls := e.leases(cl.Item.ID)
		if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeFailed {
			t.Fatalf("leases of Part A: %+v", ls)
		}
	})
	t.Run("OKAdmin", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "e2e")
		if r := e.run(adminToken, nil, "projects", "create", "second"); r.code != 0 {
			t.Fatalf("projects create: %v", r)
		}
		e.wantExit(adminToken, 6, "already", "projects", "create", "second")
		if r := e.run(adminToken, nil, "projects", "ls"); r.code != 0 || !strings.Contains(r.stdout, "second") || !strings.Contains(r.stdout, "e2e") {
			t.Fatalf("projects ls: %v", r)
		}
		r := e.run(adminToken, nil, "tokens", "create", "bot-2", "--role", "agent")
		secret := strings.TrimSpace(r.stdout)
		if r.code != 0 || secret == "" {
			t.Fatalf("tokens create: %v", r)
		}
		if r := e.run(secret, nil, "items", "ls"); r.code != 0 {
			t.Fatalf("the new token does not work: %v", r)
		}
		e.wantExit(adminToken, 6, "already exists in this project", "tokens", "create", "bot-2", "--role", "agent")
		// One style for both token commands: the name as argument or --name.
		if r := e.run(adminToken, nil, "tokens", "create", "--name", "bot-3", "--role", "agent"); r.code != 0 || strings.TrimSpace(r.stdout) == "" {
			t.Fatalf("tokens create --name: %v", r)
		}
		var list struct{ Tokens []client.Token }
		e.mustJSON(adminToken, &list, "tokens", "ls")
		id := ""
		for _, tk := range list.Tokens {
			if tk.Name == "bot-2" {
				id = tk.ID
			}
		}
		if id == "" {
			t.Fatalf("tokens ls: %+v", list)
		}
		if r := e.run(adminToken, nil, "tokens", "revoke", id); r.code != 0 {
			t.Fatalf("tokens revoke: %v", r)
		}
		e.wantExit(secret, 7, "unknown or revoked", "items", "ls")
		e.wantExit(e.agentToken, 7, "", "tokens", "ls")
	})
	t.Run("OKConfigFile", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.item("seen through the config file")
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		os.WriteFile(cfg, []byte("url: "+e.url+"\ntoken: "+e.agentToken+"\nproject: e2e\n"), 0o600)
		c := e.cmd("", nil, "items", "ls", "--config", cfg)
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "seen through the config file") {
			t.Fatalf("items ls with a config file: %v\n%s", err, out)
		}
	})
}

// TestConfigTypo: a typo in the config file is reported with the file, the
// line and the known settings, not a Go type.
func TestConfigTypo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("project: e2e\nurll: http://example.invalid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run(e.agentToken, nil, "items", "ls", "--config", path)
	want := path + `:2: unknown setting "urll" (known settings: url, token, project, worker, retries)`
	if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "cli.fileConfig") {
		t.Fatalf("want %q\n%v", want, r)
	}
}

// TestCompleteResultText: complete --result-text stores the same shape as
// the supervisor's text result, {"result_text": ...}.
func TestCompleteResultText(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("by hand")
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1", "--lease", "1m")
	fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
	if r := e.run(e.agentToken, fence, "complete", "--result-text", "fixed the flaky test"); r.code != 0 {
		t.Fatalf("complete: %v", r)
	}
	var res map[string]string
	got := e.get(it.ID)
	if err := json.Unmarshal(got.Result, &res); err != nil || len(res) != 1 || res["result_text"] != "fixed the flaky test" {
		t.Fatalf("result = %s (%v), want {\"result_text\": ...}", got.Result, err)
	}
}

// TestLeaseLostSaysWhy: when the lease is lost, the CLI says what happened
// (here a person cancelled the item), not always "taken over or expired".
func TestLeaseLostSaysWhy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("to be cancelled")
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1", "--lease", "1m")
	fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
	if r := e.run(e.humanToken, nil, "items", "cancel", it.ID, "--reason", "not needed"); r.code != 0 {
		t.Fatalf("cancel: %v", r)
	}
	r := e.run(e.agentToken, fence, "heartbeat")
	if r.code != 4 || !strings.Contains(r.stderr, "the item was cancelled") || strings.Contains(r.stderr, "taken over or expired") {
		t.Fatalf("heartbeat after cancel: want exit 4 saying the item was cancelled\n%v", r)
	}
}

// TestAttentionListTitles: attention ls names each request's item by its
// title (and short id), not by a bare UUID.
func TestAttentionListTitles(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("Pick a colour for the site")
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1", "--lease", "1m")
	fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
	if r := e.run(e.agentToken, fence, "ask", "Blue or green?"); r.code != 0 {
		t.Fatalf("ask: %v", r)
	}
	r := e.run(e.humanToken, nil, "attention", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "Pick a colour for the site") || !strings.Contains(r.stdout, it.ID[:8]) || strings.Contains(r.stdout, it.ID) {
		t.Fatalf("attention ls: want the item's title and short id\n%v", r)
	}
}

// TestClaimHintsRun: the text a claim prints tells a new user how to go
// on, and each command it shows runs as printed: the heartbeat and the
// completion with the lease's flags, and the export line, after which both
// need no flags. Without a lease, the error names the ways to give one.
func TestClaimHintsRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first := e.item("first by hand")
	second := e.item("second by hand")
	var hints [][]string
	for range 2 {
		r := e.run(e.agentToken, nil, "claim", "--worker", "w1", "--lease", "1m")
		if r.code != 0 {
			t.Fatalf("claim: %v", r)
		}
		var lines []string
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, "  workgraph ") || strings.HasPrefix(line, "  export ") {
				lines = append(lines, strings.TrimSpace(line))
			}
		}
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "workgraph heartbeat --lease-id ") || !strings.HasPrefix(lines[1], "workgraph complete --lease-id ") || !strings.HasPrefix(lines[2], "export WORKGRAPH_LEASE_ID=") {
			t.Fatalf("want a heartbeat, a completion and an export line among the hints:\n%s", r.stdout)
		}
		hints = append(hints, lines)
	}

	// The first lease: the heartbeat and the completion as printed.
	args := strings.Fields(hints[0][0])[1:]
	if r := e.run(e.agentToken, nil, args...); r.code != 0 {
		t.Fatalf("%s: %v", hints[0][0], r)
	}
	done := strings.Replace(hints[0][1], `'{"summary": "..."}'`, `{"summary":"done"}`, 1)
	if r := e.run(e.agentToken, nil, strings.Fields(done)[1:]...); r.code != 0 {
		t.Fatalf("%s: %v", done, r)
	}

	// The second lease: its export line, then the bare commands.
	exported := strings.Fields(strings.TrimPrefix(hints[1][2], "export "))
	if r := e.run(e.agentToken, exported, "heartbeat"); r.code != 0 {
		t.Fatalf("heartbeat after %s: %v", hints[1][2], r)
	}
	if r := e.run(e.agentToken, exported, "complete", "--result", `{"summary":"done"}`); r.code != 0 {
		t.Fatalf("complete after %s: %v", hints[1][2], r)
	}
	for _, it := range []*client.Item{first, second} {
		if got := e.get(it.ID); got.State != "done" {
			t.Errorf("item %q is %s, want done", it.Title, got.State)
		}
	}

	r := e.wantExit(e.agentToken, 2, "no lease", "heartbeat")
	if !strings.Contains(r.stderr, "workgraph claim --env") || !strings.Contains(r.stderr, "--lease-id") {
		t.Errorf("the error should name the ways to give a lease:\n%v", r)
	}
}

// TestAttentionResolveAnswerFlag: the answer goes as the second argument
// or as --answer; neither, or both, is a usage error that answers nothing.
func TestAttentionResolveAnswerFlag(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.item("Pick a database")
	req := e.claimAndAsk("w1", "Which one?")
	e.wantExit(e.humanToken, 2, "no answer", "attention", "resolve", req.ID)
	e.wantExit(e.humanToken, 2, "not both", "attention", "resolve", req.ID, "one", "--answer", "two")
	var open client.AttentionPage
	e.mustJSON(e.humanToken, &open, "attention", "ls")
	if len(open.Attention) != 1 {
		t.Fatalf("after the refused calls: %d open requests, want 1", len(open.Attention))
	}
	var got client.AttentionRequest
	e.mustJSON(e.humanToken, &got, "attention", "resolve", req.ID, "--answer", "PostgreSQL")
	if got.State != "resolved" || got.Answer == nil || *got.Answer != "PostgreSQL" {
		t.Fatalf("resolve --answer: %+v", got)
	}
}

// TestAttentionResolveTwice: answering a request that was answered (or
// dismissed) already changes nothing (exit 6) and says what happened: who
// closed it and with what answer, the first answer standing, instead of
// advising a retry that cannot succeed.
func TestAttentionResolveTwice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.item("Pick a database")
	req := e.claimAndAsk("w1", "Which one?")
	if r := e.run(e.humanToken, nil, "attention", "resolve", req.ID[:8], "PostgreSQL"); r.code != 0 {
		t.Fatalf("first answer: %v", r)
	}
	r := e.wantExit(e.humanToken, 6, "already answered", "attention", "resolve", req.ID[:8], "SQLite")
	for _, want := range []string{req.ID, "token:", `"PostgreSQL"`, "the first answer stands", `"SQLite" was not recorded`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "retry") {
		t.Errorf("the refusal advises a retry:\n%s", r.stderr)
	}
	var closed client.AttentionPage
	e.mustJSON(e.humanToken, &closed, "attention", "ls", "--state", "resolved")
	if len(closed.Attention) != 1 || closed.Attention[0].Answer == nil || *closed.Attention[0].Answer != "PostgreSQL" {
		t.Fatalf("after the second answer: %+v", closed.Attention)
	}
}

// TestClaimBatchCapabilities: claim --max N passes --capabilities on, as a
// single claim does: an item requiring a capability the worker names is
// granted in a batch, and one requiring more is not.
func TestClaimBatchCapabilities(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var gpu, both client.Item
	e.mustJSON(e.humanToken, &gpu, "items", "add", "Train the model", "--requires", "gpu")
	e.mustJSON(e.humanToken, &both, "items", "add", "Train on the cluster", "--requires", "gpu,cluster")
	var cs []client.Claim
	e.mustJSON(e.agentToken, &cs, "claim", "--max", "5", "--capabilities", "gpu", "--worker", "w1", "--lease", "1m")
	if len(cs) != 1 || cs[0].Item.ID != gpu.ID {
		t.Fatalf("claim --max 5 --capabilities gpu granted %d items, want only %q", len(cs), gpu.Title)
	}
	// Stored: the granted item is leased to w1, the other untouched.
	if got := e.get(gpu.ID); got.State != client.StateLeased || got.ActiveLeaseID == nil || *got.ActiveLeaseID != cs[0].Lease.ID {
		t.Errorf("%q is %s (lease %v), want leased by %s", gpu.Title, got.State, got.ActiveLeaseID, cs[0].Lease.ID)
	}
	if got := e.get(both.ID); got.State != client.StateReady || len(e.leases(both.ID)) != 0 {
		t.Errorf("%q is %s with %d leases, want ready and never leased", both.Title, got.State, len(e.leases(both.ID)))
	}
}

// TestClaimSaysWhyNothing: after a person answers a worker's question the
// item is kept for that worker a while; another worker's claim finds
// nothing and says so, naming the item and the worker it is kept for.
func TestClaimSaysWhyNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("Kept for its asker")
	asked := e.claimAndAsk("w1", "Which one?")
	r := e.run(e.humanToken, nil, "attention", "resolve", asked.ID, "this one")
	if r.code != 0 || !strings.Contains(r.stdout, "is ready again, kept for worker \"w1\" until ") {
		t.Fatalf("resolve should say the item is kept for w1: %v", r)
	}
	r = e.wantExit(e.agentToken, 3, "nothing is ready for this claim", "claim", "--worker", "w2")
	if !strings.Contains(r.stderr, "why: 1 ready item is kept for the worker that asked") || !strings.Contains(r.stderr, it.ID[:8]) || !strings.Contains(r.stderr, `worker "w1"`) {
		t.Fatalf("the refusal should say the item is kept for w1:\n%v", r)
	}
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1", "--lease", "1m")
	if cl.Item.ID != it.ID {
		t.Fatalf("w1 claimed %s, want the item kept for it", cl.Item.ID)
	}
}

// claimAndAsk claims the next item as worker and asks a blocking question
// on its lease, through the binary; it answers the request opened.
func (e *env) claimAndAsk(worker, question string) client.AttentionRequest {
	e.t.Helper()
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", worker, "--lease", "1m")
	fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=" + strconv.FormatInt(cl.Lease.Epoch, 10)}
	var asked struct {
		Attention client.AttentionRequest `json:"attention"`
	}
	r := e.run(e.agentToken, fence, "ask", question, "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &asked) != nil || asked.Attention.ID == "" {
		e.t.Fatalf("ask: %v", r)
	}
	return asked.Attention
}

// TestMigrateUpNamesEach: `workgraph migrate up` names each migration it
// applies and sums them up (the server's start logs only the sum).
func TestMigrateUpNamesEach(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.FreshURL(t)
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, append(args, "--database-url", dbURL)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("workgraph %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("migrate", "up")
	applied := strings.Count(run("migrate", "status"), "applied")
	run("migrate", "down")
	run("migrate", "down")
	out := run("migrate", "up")
	if strings.Count(out, `msg="migration applied"`) != 2 || !strings.Contains(out, `msg="migrations applied" count=2 `) {
		t.Fatalf("migrate up after two downs:\n%s", out)
	}
	// Stored: the schema is where it was before the two downs.
	if got := strings.Count(run("migrate", "status"), "applied"); got != applied || applied < 8 {
		t.Fatalf("%d migrations applied after up, want %d (at least 8)", got, applied)
	}
}

// TestEmptyListsSaySo: a list with nothing in it says so on stderr (which
// project, which filter), not a bare table header a new user takes for a
// fault; stdout keeps the header alone, and --json an empty list.
func TestEmptyListsSaySo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.run(e.humanToken, nil, "items", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, `no items in project "e2e"`) {
		t.Fatalf("items ls: %v", r)
	}
	if strings.TrimSpace(r.stdout) != "ID  STATE  PRI  TITLE  LABELS" {
		t.Errorf("stdout is not the header alone: %q", r.stdout)
	}
	e.item("Write the migration")
	r = e.run(e.humanToken, nil, "items", "ls", "--state", "done")
	if r.code != 0 || !strings.Contains(r.stderr, `no items in project "e2e" match these filters`) {
		t.Fatalf("items ls --state done: %v", r)
	}
	if r := e.run(e.humanToken, nil, "items", "ls"); r.code != 0 || strings.Contains(r.stderr, "no items") {
		t.Fatalf("items ls with an item: %v", r)
	}
	r = e.run(e.humanToken, nil, "attention", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, `no open attention requests in project "e2e"`) {
		t.Fatalf("attention ls: %v", r)
	}
	r = e.run(e.humanToken, nil, "items", "ls", "--json", "--state", "done")
	if r.code != 0 || strings.TrimSpace(r.stderr) != "" || !strings.Contains(r.stdout, `"items": []`) {
		t.Fatalf("items ls --json: %v", r)
	}
	// The lease history, the webhooks and (in a project with none) the
	// tokens say so too.
	r = e.run(e.humanToken, nil, "history")
	if r.code != 0 || !strings.Contains(r.stderr, `no leases in project "e2e"`) || strings.Contains(r.stderr, "match these filters") {
		t.Fatalf("history: %v", r)
	}
	r = e.run(e.humanToken, nil, "history", "--worker", "nobody")
	if r.code != 0 || !strings.Contains(r.stderr, `no leases in project "e2e" match these filters`) {
		t.Fatalf("history --worker nobody: %v", r)
	}
	r = e.run(e.humanToken, nil, "webhooks", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, `no webhooks in project "e2e"`) {
		t.Fatalf("webhooks ls: %v", r)
	}
	off := false
	hook, err := e.admin.CreateWebhook(context.Background(), e.project, client.CreateWebhookRequest{URL: "https://example.com/hook", Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	r = e.run(e.humanToken, nil, "webhooks", "deliveries", hook.ID)
	if r.code != 0 || !strings.Contains(r.stderr, "no deliveries of webhook "+hook.ID+" yet") {
		t.Fatalf("webhooks deliveries: %v", r)
	}
	if _, err := e.admin.CreateProject(context.Background(), "tokenless"); err != nil {
		t.Fatal(err)
	}
	r = e.run(adminToken, nil, "tokens", "ls", "--project", "tokenless")
	if r.code != 0 || !strings.Contains(r.stderr, `no tokens in project "tokenless"`) {
		t.Fatalf("tokens ls: %v", r)
	}
	if r := e.run(adminToken, nil, "tokens", "ls"); r.code != 0 || strings.Contains(r.stderr, "no tokens") {
		t.Fatalf("tokens ls with tokens: %v", r)
	}
}
