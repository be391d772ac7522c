package lease_test

import (
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestCancelClosesOpenAttention cancels an epic whose items wait for people
// in every way (a worker's blocking question, a running lease's
// non-blocking question, a person's hold) and checks that the requests are
// dismissed in the cancel's transaction: the inbox and its badge no longer
// show them, answering one is a conflict, and the counters stay exact.
func TestCancelClosesOpenAttention(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	label := []string{"cancel-me"}
	epic := f.item(t, graph.NewItem{Title: "epic"})
	asker := f.item(t, graph.NewItem{Title: "asker", ParentID: &epic.ID, Labels: label})
	runner := f.item(t, graph.NewItem{Title: "runner", ParentID: &epic.ID, Labels: label})
	other := f.item(t, graph.NewItem{Title: "other"})

	c := f.claimLabels(t, "w1", label)
	blocking := f.ask(t, c.Lease, "which way?", true).Request
	c2 := f.claimLabels(t, "w2", label)
	nonBlocking := f.ask(t, c2.Lease, "fyi?", false).Request
	if c.Item.ID == c2.Item.ID || (c.Item.ID != asker.ID && c.Item.ID != runner.ID) {
		t.Fatalf("claimed %s and %s", c.Item.Title, c2.Item.Title)
	}
	hold, err := f.att.Hold(f.ctx, f.project, epic.ID, "", "bob")
	if err != nil {
		t.Fatal(err)
	}
	untouched, err := f.att.Hold(f.ctx, f.project, other.ID, "", "bob")
	if err != nil {
		t.Fatal(err)
	}

	if _, err := f.graph.Cancel(f.ctx, f.project, epic.ID, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}

	open := attention.StateOpen
	inbox, err := f.att.List(f.ctx, f.project, attention.Filter{State: &open})
	if err != nil {
		t.Fatal(err)
	}
	if len(inbox.Requests) != 1 || inbox.Requests[0].ID != untouched.ID {
		t.Errorf("inbox after the cancel = %+v, want only the other item's hold", inbox.Requests)
	}
	badge, err := dbq.New().CountOpenAttention(f.ctx, f.conn, f.project)
	if err != nil || badge != 1 {
		t.Errorf("inbox badge = %d (%v), want 1", badge, err)
	}
	for _, r := range []attention.Request{blocking, nonBlocking, hold} {
		got, err := f.att.Get(f.ctx, f.project, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != attention.StateDismissed || got.ResolvedBy == nil || *got.ResolvedBy != "alice" ||
			got.Answer == nil || !strings.Contains(*got.Answer, "item cancelled") || !strings.Contains(*got.Answer, "not needed") {
			t.Errorf("request %q after the cancel: state %s by %v note %v", r.Question, got.State, got.ResolvedBy, got.Answer)
		}
		_, err = f.att.Resolve(f.ctx, f.project, r.ID, "left", "carol")
		if wgerr.CodeOf(err) != wgerr.CodeConflict || !strings.Contains(err.Error(), "item cancelled") {
			t.Errorf("answering %q after the cancel: err = %v, want a conflict saying the item was cancelled", r.Question, err)
		}
	}
	var wrong int
	if err := f.conn.QueryRow(f.ctx, `
		SELECT count(*) FROM items i WHERE i.project_id = $1 AND i.open_attention <>
		       (SELECT count(*) FROM attention_requests r
		        WHERE r.project_id = i.project_id AND r.item_id = i.id AND r.state = 'open' AND r.blocking)`,
		f.project).Scan(&wrong); err != nil || wrong != 0 {
		t.Errorf("%d items whose open_attention is not their open blocking requests (%v)", wrong, err)
	}
	if got := f.getItem(t, other.ID); got.State != graph.StateAttention {
		t.Errorf("the other item is %s, want still waiting for its hold", got.State)
	}
	f.checkInvariants(t)
}
