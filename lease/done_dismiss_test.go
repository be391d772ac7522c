package lease_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestDoneDismissesOpenQuestions: an item that is done asks no one
// anything more. A question its worker asked without blocking and a
// person's hold on it while it was leased are dismissed by its completion
// (by the system, with a note), whichever way the completion goes: in a
// caller's transaction, as the one round trip of a lone completion, or in
// a batch; and the item's count of open blocking requests comes back to 0.
// (They stayed open: a done item sat in the inbox forever.)
func TestDoneDismissesOpenQuestions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fixture  func(t *testing.T) fixture
		complete func(t *testing.T, f fixture, l lease.Lease)
	}{
		{"InTx", func(t *testing.T) fixture { return setup(t, lease.Config{}) }, completeOne},
		// A database of its own: a completion on a pool is the pipelined
		// round trip; in a transaction it is not.
		{"Pipelined", func(t *testing.T) fixture { return setupDB(t, lease.Config{}) }, completeOne},
		{"Batch", func(t *testing.T) fixture { return setupDB(t, lease.Config{}) }, func(t *testing.T, f fixture, l lease.Lease) {
			t.Helper()
			answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{{Fence: fence(l), Result: json.RawMessage(`{}`)}})
			if err != nil || len(answers) != 1 || answers[0].Err != nil {
				t.Fatalf("CompleteBatch = %+v, %v", answers, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.fixture(t)
			it, l := f.claimNew(t, "w")
			question := f.ask(t, l, "Should logs be JSON?", false).Request
			hold, err := f.att.Hold(f.ctx, f.project, it.ID, "wait for the release", "alice")
			if err != nil {
				t.Fatal(err)
			}
			// Another item's open question is left alone.
			_, other := f.claimNew(t, "w2")
			untouched := f.ask(t, other, "Tabs or spaces?", false).Request

			tc.complete(t, f, l)

			for _, r := range []attention.Request{question, hold} {
				got, err := f.att.Get(f.ctx, f.project, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != attention.StateDismissed || got.ResolvedBy == nil || *got.ResolvedBy != "system" || got.Answer == nil {
					t.Errorf("request %q after the completion: %s by %v (%v), want dismissed by the system with a note",
						r.Question, got.State, deref(got.ResolvedBy), deref(got.Answer))
				}
			}
			if got, err := f.att.Get(f.ctx, f.project, untouched.ID); err != nil || got.State != attention.StateOpen {
				t.Errorf("another item's question after the completion: %s, %v, want open", got.State, err)
			}
			if n := openAttention(t, f, it.ID); n != 0 {
				t.Errorf("open_attention of the done item = %d, want 0", n)
			}
		})
	}
}

func completeOne(t *testing.T, f fixture, l lease.Lease) {
	t.Helper()
	if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
}

func openAttention(t *testing.T, f fixture, item uuid.UUID) int {
	t.Helper()
	var n int
	if err := f.conn.QueryRow(f.ctx, `SELECT open_attention FROM items WHERE project_id = $1 AND id = $2`, f.project, item).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
