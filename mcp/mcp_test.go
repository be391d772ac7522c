package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

const bootstrapToken = "wg-mcp-test-bootstrap-secret"

// env is a real workgraph server with a project, an admin client for
// arranging and checking stored state, and an agent client for the MCP
// server.
type env struct {
	srv     *server.Server
	url     string
	admin   *client.Client
	agent   *client.Client
	project string
}

var projectSeq atomic.Int64

// setup starts a workgraph server on a fresh database.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with the server's config adjusted by tune (when not
// nil) first.
func setupWith(t *testing.T, tune func(*server.Config)) *env {
	t.Helper()
	ctx := context.Background()
	cfg := server.Config{BootstrapToken: bootstrapToken}
	if tune != nil {
		tune(&cfg)
	}
	srv := servertest.Start(t, cfg)
	admin := mustClient(t, srv.URL(), bootstrapToken)
	name := fmt.Sprintf("mcp-%d", projectSeq.Add(1))
	if _, err := admin.CreateProject(ctx, name); err != nil {
		t.Fatalf("create project: %v", err)
	}
	tok, err := admin.CreateToken(ctx, name, client.CreateTokenRequest{Name: "agent", Role: "agent"})
	if err != nil {
		t.Fatalf("create agent token: %v", err)
	}
	return &env{srv: srv, url: srv.URL(), admin: admin, agent: mustClient(t, srv.URL(), tok.Secret), project: name}
}

func mustClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mcpServer is an MCP server of e's project acting with the agent token.
func (e *env) mcpServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Client, cfg.Project = e.agent, e.project
	if cfg.Worker == "" {
		cfg.Worker = "mcp-agent"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func (e *env) item(t *testing.T, title string) *client.Item {
	t.Helper()
	it, err := e.admin.CreateItem(context.Background(), e.project, client.CreateItemRequest{Title: title, Body: "spec of " + title})
	if err != nil {
		t.Fatalf("create item: %v", err)
	}
	return it
}

func (e *env) get(t *testing.T, id string) *client.Item {
	t.Helper()
	it, err := e.admin.GetItem(context.Background(), e.project, id)
	if err != nil {
		t.Fatalf("get item %s: %v", id, err)
	}
	return it
}

func (e *env) leases(t *testing.T, id string) []client.Lease {
	t.Helper()
	ls, err := e.admin.ItemLeases(context.Background(), e.project, id)
	if err != nil {
		t.Fatalf("item leases: %v", err)
	}
	return ls
}

// callTool calls a tool; a protocol error fails the test (tool errors are
// results with IsError).
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its JSON answer into out
// (if not nil).
func ok(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res := callTool(t, cs, name, args)
	txt := text(res)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, txt)
	}
	if out != nil {
		last := res.Content[len(res.Content)-1].(*sdk.TextContent).Text
		if err := json.Unmarshal([]byte(last), out); err != nil {
			t.Fatalf("%s: decoding %q: %v", name, last, err)
		}
	}
	return txt
}

// toolErr calls a tool that must answer a tool error and returns its text.
func toolErr(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := callTool(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s: want a tool error, got %s", name, text(res))
	}
	return text(res)
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// eventually polls cond until it holds or the deadline passes: only for
// effects that are really asynchronous (lease expiry by the database
// clock, background heartbeats, session teardown).
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTakeAskResume: an agent takes a task, asks a person (blocking), loses
// the task to the question, and gets it back with the answer.
func TestTakeAskResume(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))
	it := e.item(t, "write the report")

	var got task
	ok(t, cs, "take_task", nil, &got)
	if got.ID != it.ID || got.Body != "spec of write the report" {
		t.Fatalf("take_task: got %+v, want item %s", got, it.ID)
	}
	if st := e.get(t, it.ID).State; st != client.StateLeased {
		t.Fatalf("after take_task: item state %q, want leased", st)
	}
	if msg := toolErr(t, cs, "take_task", nil); !strings.Contains(msg, "already hold task "+it.ID) {
		t.Errorf("second take_task: %q", msg)
	}

	ok(t, cs, "ask_person", map[string]any{"question": "PDF or HTML?", "suggested_answers": []string{"PDF", "HTML"}}, nil)
	if st := e.get(t, it.ID).State; st != client.StateAttention {
		t.Fatalf("after ask_person: item state %q, want attention", st)
	}
	ls := e.leases(t, it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeAttentionRequested {
		t.Fatalf("after ask_person: leases %+v, want one ended attention_requested", ls)
	}
	if msg := toolErr(t, cs, "finish_task", map[string]any{"result": "x"}); !strings.Contains(msg, "hold no task") {
		t.Errorf("finish_task without a task: %q", msg)
	}
	if txt := ok(t, cs, "take_task", nil, nil); !strings.Contains(txt, "No task is ready") {
		t.Errorf("take_task while waiting for a person: %q", txt)
	}

	page, err := e.admin.ListAttention(context.Background(), e.project, client.ListAttentionOptions{State: "open"})
	if err != nil || len(page.Attention) != 1 {
		t.Fatalf("open attention: %+v, %v", page, err)
	}
	if _, err := e.admin.Resolve(context.Background(), page.Attention[0].ID, "PDF"); err != nil {
		t.Fatalf("resolve: %v", err)
	}

	got = task{}
	ok(t, cs, "take_task", nil, &got)
	if got.ID != it.ID || len(got.Attention) != 1 || got.Attention[0].Answer != "PDF" {
		t.Fatalf("take_task after the answer: got %+v, want item %s with the answer PDF", got, it.ID)
	}
	ok(t, cs, "finish_task", map[string]any{"result": map[string]any{"format": "PDF"}}, nil)
	done := e.get(t, it.ID)
	if done.State != client.StateDone || !strings.Contains(string(done.Result), "PDF") {
		t.Fatalf("after finish_task: state %q result %s, want done with the result", done.State, done.Result)
	}
}

// TestLeaseLost: the session's lease is lost while its heartbeat is paused;
// every worker tool then answers the lease-lost error and changes nothing.
func TestLeaseLost(t *testing.T) {
	t.Parallel()

	t.Run("ErrLeaseLostTakenOver", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		srv := e.mcpServer(t, Config{LeaseSeconds: 1})
		srv.heartbeatPaused.Store(true)
		cs := connectInMemory(t, srv)
		it := e.item(t, "contended")
		ok(t, cs, "take_task", nil, nil)

		// Another worker takes the item over once the lease has expired by
		// the database clock.
		var other *client.Claim
		eventually(t, 10*time.Second, "another worker to take the item over", func() bool {
			c, err := e.agent.Claim(context.Background(), e.project, client.ClaimRequest{Worker: "other", LeaseSeconds: 60})
			if err != nil && !errors.Is(err, client.ErrNothingReady) {
				t.Fatalf("claim: %v", err)
			}
			other = c
			return c != nil
		})
		if other.Item.ID != it.ID {
			t.Fatalf("other worker got %s, want %s", other.Item.ID, it.ID)
		}

		msg := toolErr(t, cs, "finish_task", map[string]any{"result": "mine"})
		if !strings.Contains(msg, "lease lost") || !strings.Contains(msg, "take_task") {
			t.Errorf("finish_task after takeover: %q", msg)
		}
		// The claim that took the item over ended the first lease as
		// expired: the agent is told so, not that someone cancelled it.
		if !strings.Contains(msg, "(its lease expired: no report or heartbeat arrived in time") || strings.Contains(msg, "cancelled") {
			t.Errorf("finish_task after takeover does not say the lease expired: %q", msg)
		}
		stored := e.get(t, it.ID)
		if stored.State != client.StateLeased || len(stored.Result) > 0 && string(stored.Result) != "null" {
			t.Fatalf("after the refused finish: state %q result %s, want leased by the other worker", stored.State, stored.Result)
		}
		ls := e.leases(t, it.ID)
		if len(ls) != 2 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeExpired || ls[1].Worker != "other" || ls[1].EndedAt != nil {
			t.Fatalf("leases %+v: want the first expired, the second the other worker's and active", ls)
		}
		// The session has let go of the lost lease.
		if msg := toolErr(t, cs, "report_progress", nil); !strings.Contains(msg, "hold no task") {
			t.Errorf("report_progress after the loss: %q", msg)
		}
	})

	t.Run("ErrLeaseLostCancelled", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{LeaseSeconds: 1}))
		it := e.item(t, "no longer wanted")
		ok(t, cs, "take_task", nil, nil)
		if _, err := e.admin.CancelItem(context.Background(), e.project, it.ID, "not needed"); err != nil {
			t.Fatalf("cancel: %v", err)
		}
		// The background heartbeat finds the lease gone; every tool answer
		// then carries the warning.
		var warned string
		eventually(t, 10*time.Second, "list_tasks to warn of the lost lease", func() bool {
			warned = ok(t, cs, "list_tasks", nil, nil)
			return strings.Contains(warned, "Warning: lease lost: task "+it.ID)
		})
		// Both the warning and the refusal say what happened: a person
		// cancelled the task (not an expiry or a take-over).
		if !strings.Contains(warned, "no longer yours (a person cancelled it)") {
			t.Errorf("the warning does not say the task was cancelled: %q", warned)
		}
		if msg := toolErr(t, cs, "finish_task", map[string]any{"result": "anyway"}); !strings.Contains(msg, "lease lost") ||
			!strings.Contains(msg, "no longer yours (a person cancelled it)") {
			t.Errorf("finish_task after cancellation: %q", msg)
		}
		if st := e.get(t, it.ID).State; st != client.StateCancelled {
			t.Fatalf("item state %q, want cancelled", st)
		}
		if txt := ok(t, cs, "list_tasks", nil, nil); strings.Contains(txt, "Warning") {
			t.Errorf("the warning outlived the refused call: %q", txt)
		}
	})

	t.Run("ErrLeaseLostExpired", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		srv := e.mcpServer(t, Config{LeaseSeconds: 1})
		srv.heartbeatPaused.Store(true)
		cs := connectInMemory(t, srv)
		it := e.item(t, "slow")
		ok(t, cs, "take_task", nil, nil)

		// Let the one-second lease expire by the database clock.
		expires := e.leases(t, it.ID)[0].ExpiresAt
		eventually(t, 10*time.Second, "the lease to expire by the database clock", func() bool {
			var past bool
			if err := e.srv.Pool().QueryRow(context.Background(), "SELECT now() > $1", expires).Scan(&past); err != nil {
				t.Fatal(err)
			}
			return past
		})

		msg := toolErr(t, cs, "finish_task", map[string]any{"result": "late"})
		if !strings.Contains(msg, "lease lost: task "+it.ID) {
			t.Errorf("finish_task after expiry: %q", msg)
		}
		if st := e.get(t, it.ID); st.State == client.StateDone {
			t.Fatalf("item completed by a lost lease: %+v", st)
		}
		ls := e.leases(t, it.ID)
		if len(ls) != 1 || ls[0].Outcome != nil && *ls[0].Outcome == client.OutcomeCompleted {
			t.Fatalf("leases %+v: the expired lease must not be completed", ls)
		}
	})
}

// TestHeartbeatKeepsLease: the background heartbeat keeps a short lease
// alive well past its TTL.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{LeaseSeconds: 1}))
	it := e.item(t, "long job")
	ok(t, cs, "take_task", nil, nil)

	eventually(t, 10*time.Second, "heartbeats to carry the lease past twice its TTL", func() bool {
		ls := e.leases(t, it.ID)
		return len(ls) == 1 && ls[0].EndedAt == nil && ls[0].ExpiresAt.Sub(ls[0].AcquiredAt) > 2*time.Second
	})
	ok(t, cs, "finish_task", map[string]any{"result": "done"}, nil)
	if st := e.get(t, it.ID).State; st != client.StateDone {
		t.Fatalf("item state %q, want done", st)
	}
}

// TestSessionEndReleases: a session that ends gives its task back.
func TestSessionEndReleases(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))
	it := e.item(t, "abandoned")
	ok(t, cs, "take_task", nil, nil)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the task to be released", func() bool {
		return e.get(t, it.ID).State == client.StateReady
	})
	ls := e.leases(t, it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeReleased {
		t.Fatalf("leases %+v: want one released", ls)
	}
}

// TestTakeSaysWhyNothing: when no task is ready for the agent but the
// project has ready tasks it may not take, take_task says why (here a task
// kept for the agent that asked a person about it), so the agent need not
// poll blindly; the agent that asked gets the task.
func TestTakeSaysWhyNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	asker := connectInMemory(t, e.mcpServer(t, Config{Worker: "mcp-asker"}))
	// The other agent's client counts the item listings it sends.
	var listings atomic.Int64
	tok, err := e.admin.CreateToken(context.Background(), e.project, client.CreateTokenRequest{Name: "other", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	counting, err := client.New(e.url, tok.Secret, client.WithHTTPClient(&http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/items") {
			listings.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Client: counting, Project: e.project, Worker: "mcp-other"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	other := connectInMemory(t, srv)
	it := e.item(t, "kept for its asker")
	ok(t, asker, "take_task", nil, nil)
	ok(t, asker, "ask_person", map[string]any{"question": "PDF or HTML?"}, nil)
	page, err := e.admin.ListAttention(context.Background(), e.project, client.ListAttentionOptions{State: "open"})
	if err != nil || len(page.Attention) != 1 {
		t.Fatalf("open attention: %+v, %v", page, err)
	}
	if _, err := e.admin.Resolve(context.Background(), page.Attention[0].ID, "PDF"); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	// Polling: the explanation is read once, then reused for the same
	// labels and capabilities; other labels read it again. Asking for a
	// label the item does not carry, the agent is told that, not of the
	// reservation: it would not get the item when the reservation ends.
	for i, c := range []struct {
		labels []string
		reads  int64
	}{{nil, 2}, {nil, 2}, {[]string{"docs"}, 4}} {
		args := map[string]any{}
		if c.labels != nil {
			args["labels"] = c.labels
		}
		txt := ok(t, other, "take_task", args, nil)
		if c.labels != nil {
			if !strings.Contains(txt, "No task is ready") || !strings.Contains(txt, "1 ready item does not carry every label asked for (docs)") ||
				strings.Contains(txt, "kept for") {
				t.Fatalf("take_task %d of another agent: %q", i+1, txt)
			}
		} else if !strings.Contains(txt, "No task is ready") || !strings.Contains(txt, "1 ready item is kept for the worker that asked a person") ||
			!strings.Contains(txt, `worker "mcp-asker"`) || !strings.Contains(txt, it.ID[:8]) {
			t.Fatalf("take_task %d of another agent: %q", i+1, txt)
		}
		if n := listings.Load(); n != c.reads {
			t.Errorf("after take_task %d: %d item listings, want %d", i+1, n, c.reads)
		}
	}
	var got task
	ok(t, asker, "take_task", nil, &got)
	if got.ID != it.ID {
		t.Fatalf("the asker took %+v, want %s", got, it.ID)
	}
}

// TestFailSaysWhatFollows: fail_task tells the agent what its failure
// leaves: a retry and from when, or, at the project's failure limit, a
// person asked to look (so the agent does not wait for a retry).
func TestFailSaysWhatFollows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit int
		want  string
	}{
		{0, "will be retried from 20"},
		{1, "a person is asked to look at it"},
	} {
		e := setupWith(t, func(cfg *server.Config) { cfg.Lease.MaxFailures = c.limit })
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		e.item(t, "fails")
		ok(t, cs, "take_task", nil, nil)
		if txt := ok(t, cs, "fail_task", map[string]any{"error": "tests do not compile"}, nil); !strings.Contains(txt, c.want) {
			t.Errorf("failure limit %d: fail_task said %q, want %q", c.limit, txt, c.want)
		}
	}
}

// roundTrip is an http.RoundTripper from a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProgressSaysWhyStop: when a person asks the worker to stop with a
// reason, report_progress hands the agent the reason (the lease's
// stop_note), in its answer and its sentence. It used to say only that a
// person asked to stop, so the agent could not tell "wrong approach" from
// "the customer cancelled" and wrap up accordingly.
func TestProgressSaysWhyStop(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := e.mcpServer(t, Config{})
	srv.heartbeatPaused.Store(true) // only report_progress heartbeats
	cs := connectInMemory(t, srv)
	it := e.item(t, "port the parser")

	var got task
	ok(t, cs, "take_task", nil, &got)
	var before progressReply
	ok(t, cs, "report_progress", map[string]any{"note": "started"}, &before)
	if before.StopRequested || before.StopNote != "" {
		t.Fatalf("before a stop request: %+v", before)
	}
	ls := e.leases(t, it.ID)
	if len(ls) != 1 {
		t.Fatalf("leases %+v, want one", ls)
	}
	if _, err := e.admin.RequestStop(context.Background(), ls[0].ID, "wrong approach: use the generated grammar"); err != nil {
		t.Fatalf("request stop: %v", err)
	}
	var after progressReply
	txt := ok(t, cs, "report_progress", map[string]any{"note": "more"}, &after)
	if !after.StopRequested || after.StopNote != "wrong approach: use the generated grammar" {
		t.Fatalf("after a stop request: %+v, want stop_requested with the note", after)
	}
	if !strings.Contains(txt, "wrong approach: use the generated grammar") {
		t.Fatalf("report_progress says %q, without the person's reason", txt)
	}
}

// TestTakeSaysOlderQuestions: take_task hands over the task's latest 20
// questions and says that it has older ones.
func TestTakeSaysOlderQuestions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))
	it := e.item(t, "asked about often")
	ctx := context.Background()
	for i := range 21 {
		hold, err := e.admin.Hold(ctx, e.project, it.ID, fmt.Sprintf("hold %d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.Dismiss(ctx, hold.ID, "go on"); err != nil {
			t.Fatal(err)
		}
	}
	var got task
	ok(t, cs, "take_task", nil, &got)
	first := ""
	if len(got.Attention) > 0 {
		first = got.Attention[0].Question
	}
	if got.ID != it.ID || len(got.Attention) != 20 || first != "hold 1" || !got.OlderAttention {
		t.Fatalf("take_task: %d questions from %q, older %v; want the latest 20, from hold 1, and older_attention",
			len(got.Attention), first, got.OlderAttention)
	}
}
