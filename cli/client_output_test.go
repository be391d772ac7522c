package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
)

// TestPrintLeasesClipsWorker: the history table cuts a long worker name
// (names may have 200 characters) as it cuts titles, so that a row stays
// readable; --json keeps the whole name.
func TestPrintLeasesClipsWorker(t *testing.T) {
	long := strings.Repeat("verylongworkername-", 6)
	var b bytes.Buffer
	printLeases(&b, []client.Lease{{ID: uuid.NewString(), ItemID: uuid.NewString(), Epoch: 1, Worker: long, AcquiredAt: time.Now()}})
	out := b.String()
	if strings.Contains(out, long) {
		t.Errorf("the whole %d-character name is in the table:\n%s", len(long), out)
	}
	if !strings.Contains(out, long[:31]+"…") {
		t.Errorf("want the name cut to 31 characters and an ellipsis:\n%s", out)
	}
}

// TestLeaseDetail: the history table says what an outcome's detail holds
// in words: a failure's message, a release's reason, the request an ask
// opened, a decomposition's children, an expiry's reaping; other details
// as their JSON.
func TestLeaseDetail(t *testing.T) {
	reaped := fmtTime(time.Date(2026, 12, 6, 16, 33, 24, 562692000, time.UTC))
	for raw, want := range map[string]string{
		``:     "",
		`null`: "",
		`{"message": "tests fail", "details": {"exit": 1}}`:                       "tests fail",
		`{"reason": "shutting down"}`:                                             "shutting down",
		`{"attention_request_id": "544f6234-2558-4799-a024-bec437fe7100"}`:        "asked a person (request 544f6234)",
		`{"attention_request_id": "544f6234-2558-4799", "reason": "no_progress"}`: "asked a person (request 544f6234): no_progress",
		`{"children": ["a", "b", "c"]}`:                                           "3 children",
		`{"children": ["a"]}`:                                                     "1 child",
		`{"reaped_at": "2026-12-06T16:33:24.562692+00:00", "heartbeats": 3}`:      "not renewed; reaped " + reaped + " after 3 heartbeats",
		`{"reaped_at": "2026-12-06T16:33:24.562692+00:00", "heartbeats": 1}`:      "not renewed; reaped " + reaped + " after 1 heartbeat",
		`{"swept_by": "replica-2"}`:                                               `{"swept_by": "replica-2"}`,
		`{"message": ""}`:                                                         `{"message": ""}`,
	} {
		if got := leaseDetail([]byte(raw)); got != want {
			t.Errorf("leaseDetail(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestLeaseDetailCancelled: a cancelled lease's detail says who
// cancelled the item, and why when a reason was given; without one it
// showed its JSON, {"by":"token:planner","reason":""}, and with one the
// reason alone.
func TestLeaseDetailCancelled(t *testing.T) {
	for raw, want := range map[string]string{
		`{"by": "token:planner", "reason": ""}`:    "cancelled by token:planner",
		`{"by": "token:planner"}`:                  "cancelled by token:planner",
		`{"by": "token:planner", "reason": "dup"}`: "cancelled by token:planner: dup",
	} {
		if got := leaseDetail([]byte(raw)); got != want {
			t.Errorf("leaseDetail(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestLeaseLostHintExpired: a worker whose lease expired is told both
// things that may follow: another worker takes the item (on_expiry
// retry), or the item waits for a person's decision, who sees the late
// report (on_expiry reconcile); it is not told only the first.
func TestLeaseLostHintExpired(t *testing.T) {
	e := &client.Error{Code: client.CodeLeaseLost, Detail: "lease l has ended (expired)",
		Extensions: map[string]json.RawMessage{"outcome": json.RawMessage(`"expired"`)}}
	hint := leaseLostHint(e)
	for _, want := range []string{"another worker", "decision", "stop working on this item"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint %q lacks %q", hint, want)
		}
	}
}

// TestLeaseLostHintWrongEpoch: a lease id with an epoch it was never
// granted at (a lease's epoch never changes: the item's next claim is a
// new lease) is a lease id and an epoch of different claims, and the
// worker is told so and to pass the claim's epoch. It was told "the item
// was claimed again since (a newer epoch); stop working on this item",
// while its lease might be live and its own.
func TestLeaseLostHintWrongEpoch(t *testing.T) {
	e := &client.Error{Code: client.CodeLeaseLost, Detail: "lease l was not granted at this epoch",
		Extensions: map[string]json.RawMessage{"epoch": json.RawMessage(`2`)}}
	hint := leaseLostHint(e)
	for _, want := range []string{"epoch 2", "different claims", "nothing was changed"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint %q lacks %q", hint, want)
		}
	}
	for _, lie := range []string{"claimed again", "stop working"} {
		if strings.Contains(hint, lie) {
			t.Errorf("hint %q says %q", hint, lie)
		}
	}
}

// TestSupervisedLostHintActsAlone: what `workgraph work` says of a lost
// lease tells what happened, never to act by hand (the supervisor stops
// the command and goes on by itself): not to pass an epoch (its own
// claim's, which it sent), nor to stop or to claim again.
func TestSupervisedLostHintActsAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  *client.Error
		want string
	}{
		{"EpochMismatch", &client.Error{Code: client.CodeLeaseLost, Detail: "lease l was not granted at this epoch",
			Extensions: map[string]json.RawMessage{"epoch": json.RawMessage(`2`)}}, "epoch 2"},
		{"Cancelled", &client.Error{Code: client.CodeLeaseLost, Detail: "lease l has ended (cancelled)",
			Extensions: map[string]json.RawMessage{"outcome": json.RawMessage(`"cancelled"`)}}, "the item was cancelled"},
		{"Expired", &client.Error{Code: client.CodeLeaseLost, Detail: "lease l has expired"}, "the lease expired"},
		{"Unknown", &client.Error{Code: client.CodeLeaseLost}, "taken over or expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hint := supervisedLostHint(c.err)
			if !strings.Contains(hint, c.want) {
				t.Errorf("hint %q lacks %q", hint, c.want)
			}
			for _, byHand := range []string{"workgraph ", "Pass the epoch", "stop working", "claim again"} {
				if strings.Contains(hint, byHand) {
					t.Errorf("hint %q tells the worker to act by hand (%q)", hint, byHand)
				}
			}
		})
	}
}

// TestPrintClaimShowsFence: a plain claim (neither --json nor --env) shows
// the lease's fence token, which an agent hands the systems it writes to
// (docs/agents.md, "Fencing your effects"), and the export line it
// suggests gives the shell WORKGRAPH_FENCE too, as `claim --env` does.
func TestPrintClaimShowsFence(t *testing.T) {
	t.Parallel()
	const token = "wgf1.eyJsZWFzZSI6IngifQ.c2lnbmF0dXJl"
	cl := &client.Claim{FenceToken: token}
	cl.Lease.ID, cl.Lease.Epoch, cl.Lease.ExpiresAt = uuid.NewString(), 3, time.Now().Add(time.Minute)
	cl.Item.ID, cl.Item.Title = uuid.NewString(), "Write the migration"
	var b bytes.Buffer
	printClaim(&b, cl)
	out := b.String()
	var shown, exported bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "fence" && f[1] == token {
			shown = true
		}
		if len(f) > 0 && f[0] == "export" && strings.Contains(line, " WORKGRAPH_FENCE="+token) {
			exported = true
		}
	}
	if !shown {
		t.Errorf("no `fence <token>` line in the claim's output:\n%s", out)
	}
	if !exported {
		t.Errorf("the export line does not give WORKGRAPH_FENCE:\n%s", out)
	}
}

// TestPrintClaimSaysOlderQuestions: a claim whose item has older questions
// than the latest ones it carries says so, and how to list them; one that
// carries the whole history says nothing of it.
func TestPrintClaimSaysOlderQuestions(t *testing.T) {
	t.Parallel()
	answer := "yes"
	cl := &client.Claim{Attention: []client.AttentionRequest{{Question: "Ship it?", State: "resolved", Answer: &answer}}}
	cl.Lease.ID, cl.Lease.Epoch, cl.Lease.ExpiresAt = uuid.NewString(), 3, time.Now().Add(time.Minute)
	cl.Item.ID, cl.Item.Title = uuid.NewString(), "Write the migration"
	var b bytes.Buffer
	printClaim(&b, cl)
	if out := b.String(); strings.Contains(out, "older questions") || !strings.Contains(out, "Ship it?") {
		t.Errorf("a claim with its whole history:\n%s", out)
	}
	cl.OlderAttention = true
	b.Reset()
	printClaim(&b, cl)
	if out, want := b.String(), "workgraph attention ls --item "+cl.Item.ID+" --state resolved"; !strings.Contains(out, "older questions") || !strings.Contains(out, want) {
		t.Errorf("a claim with older questions does not say so, with %q:\n%s", want, out)
	}
}

// TestPrintHeartbeatSaysOlderAnswers: a heartbeat carries the lease's
// newest answers; when the lease has older ones, `workgraph heartbeat`
// says so and how to list them.
func TestPrintHeartbeatSaysOlderAnswers(t *testing.T) {
	t.Parallel()
	answer := "yes"
	hb := &client.Heartbeat{ExpiresAt: time.Now().Add(time.Minute),
		Answers: []client.AttentionRequest{{Question: "Ship it?", State: "resolved", Answer: &answer}}}
	hb.Lease.ID, hb.Lease.ItemID = uuid.NewString(), uuid.NewString()
	var b bytes.Buffer
	printHeartbeat(&b, hb.Lease.ID, hb)
	if out := b.String(); strings.Contains(out, "older answers") || !strings.Contains(out, `answer to "Ship it?": yes`) {
		t.Errorf("a heartbeat with every answer:\n%s", out)
	}
	hb.OlderAnswers = true
	b.Reset()
	printHeartbeat(&b, hb.Lease.ID, hb)
	if out, want := b.String(), "workgraph attention ls --item "+hb.Lease.ItemID+" --state resolved"; !strings.Contains(out, "older answers") || !strings.Contains(out, want) {
		t.Errorf("a heartbeat with older answers does not say so, with %q:\n%s", want, out)
	}
}
