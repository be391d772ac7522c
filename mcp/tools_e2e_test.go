package mcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/client"
)

// TestGraphTools: create, depend, list and show tasks.
func TestGraphTools(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))

	var a, b taskRef
	ok(t, cs, "create_task", map[string]any{"title": "A", "labels": []string{"docs"}, "priority": 5}, &a)
	ok(t, cs, "create_task", map[string]any{"title": "B", "depends_on": []string{a.ID}}, &b)
	if a.ID == "" || b.ID == "" || b.State != client.StateBlocked {
		t.Fatalf("created %+v and %+v: want ids, B blocked", a, b)
	}
	if st := e.get(t, b.ID); st.Title != "B" || st.State != client.StateBlocked {
		t.Fatalf("stored B: %+v", st)
	}

	t.Run("ErrDependencyCycle", func(t *testing.T) {
		msg := toolErr(t, cs, "add_dependency", map[string]any{"task_id": a.ID, "depends_on": b.ID})
		if !strings.Contains(msg, "dependency_cycle") {
			t.Errorf("cycle: %q", msg)
		}
		if st := e.get(t, a.ID).State; st != client.StateReady {
			t.Errorf("A after the refused edge: %q, want ready", st)
		}
	})

	t.Run("AddDependency", func(t *testing.T) {
		var c taskRef
		ok(t, cs, "create_task", map[string]any{"title": "C"}, &c)
		ok(t, cs, "add_dependency", map[string]any{"task_id": c.ID, "depends_on": a.ID}, nil)
		if st := e.get(t, c.ID).State; st != client.StateBlocked {
			t.Errorf("C after add_dependency: %q, want blocked", st)
		}
	})

	t.Run("ListAndShow", func(t *testing.T) {
		var page taskPage
		ok(t, cs, "list_tasks", map[string]any{"label": "docs"}, &page)
		if len(page.Tasks) != 1 || page.Tasks[0].ID != a.ID {
			t.Errorf("list_tasks label=docs: %+v", page)
		}
		var shown task
		ok(t, cs, "show_task", map[string]any{"task_id": b.ID}, &shown)
		if shown.ID != b.ID || !strings.Contains(string(shown.BlockedBy), a.ID) {
			t.Errorf("show_task B: %+v, want blocked_by naming A", shown)
		}
		if msg := toolErr(t, cs, "show_task", nil); !strings.Contains(msg, "task_id") {
			t.Errorf("show_task without a task: %q", msg)
		}
	})
}

// TestWorkerTools: progress with a non-blocking question, release, fail and
// split, each checked against the stored state.
func TestWorkerTools(t *testing.T) {
	t.Parallel()

	t.Run("ProgressAndAnswer", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		it := e.item(t, "ask on the side")
		ok(t, cs, "take_task", nil, nil)
		ok(t, cs, "ask_person", map[string]any{"question": "Which colour?", "blocking": false}, nil)
		if st := e.get(t, it.ID).State; st != client.StateLeased {
			t.Fatalf("after a non-blocking ask: %q, want still leased", st)
		}
		page, err := e.admin.ListAttention(context.Background(), e.project, client.ListAttentionOptions{State: "open"})
		if err != nil || len(page.Attention) != 1 {
			t.Fatalf("open attention: %+v, %v", page, err)
		}
		if _, err := e.admin.Resolve(context.Background(), page.Attention[0].ID, "blue"); err != nil {
			t.Fatal(err)
		}
		var pr progressReply
		ok(t, cs, "report_progress", map[string]any{"note": "halfway"}, &pr)
		if pr.TaskID != it.ID || len(pr.Answers) != 1 || pr.Answers[0].Answer != "blue" {
			t.Fatalf("report_progress: %+v, want the answer blue", pr)
		}
		pr = progressReply{}
		ok(t, cs, "report_progress", nil, &pr)
		if len(pr.Answers) != 0 {
			t.Errorf("second report_progress repeats answers: %+v", pr)
		}
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		it := e.item(t, "not for me")
		ok(t, cs, "take_task", nil, nil)
		ok(t, cs, "release_task", map[string]any{"reason": "wrong skills"}, nil)
		if st := e.get(t, it.ID).State; st != client.StateReady {
			t.Errorf("after release_task: %q, want ready", st)
		}
	})

	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		it := e.item(t, "flaky")
		ok(t, cs, "take_task", nil, nil)
		ok(t, cs, "fail_task", map[string]any{"error": "tests do not compile"}, nil)
		ls := e.leases(t, it.ID)
		if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeFailed {
			t.Errorf("after fail_task: leases %+v, want one failed", ls)
		}
	})

	t.Run("ErrBlocked", func(t *testing.T) {
		// A person makes the task wait for another while the agent holds
		// it: finish_task is refused, says what it waits for, and the task
		// stays the agent's (it can still release it).
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		it := e.item(t, "grows a prerequisite")
		ok(t, cs, "take_task", nil, nil)
		pre := e.item(t, "prerequisite")
		if err := e.admin.AddDependency(context.Background(), e.project, it.ID, pre.ID); err != nil {
			t.Fatal(err)
		}
		msg := toolErr(t, cs, "finish_task", map[string]any{"result": "done"})
		if !strings.Contains(msg, "blocked") || !strings.Contains(msg, pre.ID) || !strings.Contains(msg, "release_task") {
			t.Errorf("finish_task of a blocked task: %q, want blocked naming %s and release_task", msg, pre.ID)
		}
		if st := e.get(t, it.ID).State; st != client.StateLeased {
			t.Errorf("after the refused finish_task: %q, want still leased", st)
		}
		ok(t, cs, "release_task", map[string]any{"reason": "waits for a prerequisite"}, nil)
		if st := e.get(t, it.ID).State; st != client.StateBlocked {
			t.Errorf("after release_task: %q, want blocked", st)
		}
	})

	t.Run("Split", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		cs := connectInMemory(t, e.mcpServer(t, Config{}))
		it := e.item(t, "big")
		ok(t, cs, "take_task", nil, nil)
		var children []taskRef
		ok(t, cs, "split_task", map[string]any{"subtasks": []map[string]any{
			{"key": "a", "title": "part a"},
			{"key": "b", "title": "part b", "depends_on": []string{"a"}, "requires": []string{"go"}, "touches": []string{"repo:web/**"}},
		}}, &children)
		if len(children) != 2 {
			t.Fatalf("split_task: %+v, want two subtasks", children)
		}
		if b := e.get(t, children[1].ID); fmt.Sprint(b.Requires, b.Touches) != "[go] [repo:web/**]" {
			t.Errorf("subtask b stored requires %v touches %v, want [go] [repo:web/**]", b.Requires, b.Touches)
		}
		parent := e.get(t, it.ID)
		if parent.State != client.StateBlocked {
			t.Errorf("parent after split_task: %q, want blocked", parent.State)
		}
		var next task
		ok(t, cs, "take_task", nil, &next)
		if next.Title != "part a" || next.ParentID != it.ID {
			t.Errorf("next task after split: %+v, want part a of %s", next, it.ID)
		}
	})
}

// TestStreamableHTTP: two MCP sessions over streamable HTTP hold one lease
// each.
func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := e.mcpServer(t, Config{})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	first, second := e.item(t, "first"), e.item(t, "second")

	connect := func() *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "http-agent", Version: "v0"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	one, two := connect(), connect()
	var t1, t2 task
	ok(t, one, "take_task", nil, &t1)
	ok(t, two, "take_task", nil, &t2)
	if t1.ID == t2.ID || (t1.ID != first.ID && t1.ID != second.ID) || (t2.ID != first.ID && t2.ID != second.ID) {
		t.Fatalf("sessions took %s and %s, want the two items", t1.ID, t2.ID)
	}
	ok(t, two, "finish_task", map[string]any{"result": "two"}, nil)
	ok(t, one, "finish_task", map[string]any{"result": "one"}, nil)
	for _, id := range []string{first.ID, second.ID} {
		if st := e.get(t, id).State; st != client.StateDone {
			t.Errorf("item %s: %q, want done", id, st)
		}
	}
}

// TestToolsRefuseInvisibleCharacters: the MCP tools write through the API,
// so a title with a bidirectional override or a tab, or a subtask's, is a
// tool error naming the field, and nothing is created.
func TestToolsRefuseInvisibleCharacters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))
	for _, title := range []string{"invoice\u202efdp.exe", "a\tb"} {
		if msg := toolErr(t, cs, "create_task", map[string]any{"title": title}); !strings.Contains(msg, "title") || !strings.Contains(msg, "U+") {
			t.Errorf("create_task %q: %q, want an error naming the title and the character", title, msg)
		}
	}
	e.item(t, "parent")
	ok(t, cs, "take_task", nil, nil)
	msg := toolErr(t, cs, "split_task", map[string]any{"subtasks": []map[string]any{{"key": "a", "title": "x\u2066y"}}})
	if !strings.Contains(msg, "title") || !strings.Contains(msg, "U+2066") {
		t.Errorf("split_task: %q, want an error naming the subtask's title", msg)
	}
	page, err := e.admin.ListItems(context.Background(), e.project, client.ListItemsOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("items %+v, %v: want only the parent", page, err)
	}
}
