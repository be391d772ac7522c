package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/events"
)

// evil is text an agent may store: escape sequences that clear the
// screen, set the window title and colour what follows (C0 ESC and BEL, a
// C1 CSI), and a carriage return that would let a forged line overwrite
// the real one.
const evil = "Deploy \x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b1m\rFORGED"

// controls reports the first byte of out that drives a terminal: a C0
// control other than newline and tab, DEL, or a C1 control (U+0080..U+009F,
// UTF-8 0xC2 0x80..0x9F).
func controls(out string) (int, bool) {
	for i := 0; i < len(out); i++ {
		b := out[i]
		if (b < 0x20 && b != '\n' && b != '\t') || b == 0x7f {
			return i, true
		}
		if b == 0xc2 && i+1 < len(out) && out[i+1] >= 0x80 && out[i+1] <= 0x9f {
			return i, true
		}
	}
	return 0, false
}

// TestAgentTextCannotDriveTheTerminal: what an agent wrote (a title, a
// body, a question) reaches a person's terminal through the command line
// as visible text: its escape sequences and carriage returns are shown
// escaped, never written raw (they cleared the screen, retitled the
// window and forged lines). --json keeps the text exact.
//
// The server now refuses escape sequences at the source (a title or a
// worker label takes no control character; a body or a question none but
// tab and line breaks), which the test checks first; a carriage return in
// a question is still taken, and text stored before the server refused it
// is still shown, so the item's evil title and body are written into the
// database directly.
func TestAgentTextCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for _, req := range []client.CreateItemRequest{{Title: evil}, {Title: "Deploy", Body: "body " + evil}} {
		if _, err := e.agent.CreateItem(ctx, e.project, req); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("create %+v: %v, want invalid_argument", req, err)
		}
	}
	it, err := e.agent.CreateItem(ctx, e.project, client.CreateItemRequest{Title: "Deploy", Body: "body"})
	if err != nil {
		t.Fatal(err)
	}
	// The edit as it was stored before: the row and its item.updated event.
	id := uuid.MustParse(it.ID)
	var project uuid.UUID
	if err := e.pool.QueryRow(ctx, `UPDATE items SET title = $1, body = 'body ' || $1, version = version + 1 WHERE id = $2 RETURNING project_id`,
		evil, id).Scan(&project); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Append(ctx, e.pool, events.New{Project: project, Type: events.ItemUpdated, Actor: "token:agent-1", ItemID: &id,
		Payload: map[string]any{"version": 2, "fields": []string{"title", "body"}, "title": evil}}); err != nil {
		t.Fatal(err)
	}
	// A worker label is refused at the source: the server takes none with
	// control characters (it is shown in history, pages and logs).
	if _, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w" + evil, LeaseSeconds: 60}); err == nil {
		t.Fatal("a worker label with escape sequences was accepted")
	}
	cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w-evil", LeaseSeconds: 60})
	if err != nil || cl == nil {
		t.Fatalf("claim: %v %v", cl, err)
	}
	if _, err := e.agent.Ask(ctx, cl.Lease.ID, client.AskRequest{Epoch: cl.Lease.Epoch, Question: "Which? " + evil}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("ask with escape sequences: %v, want invalid_argument", err)
	}
	if _, err := e.agent.Ask(ctx, cl.Lease.ID, client.AskRequest{Epoch: cl.Lease.Epoch, Question: "Which? RED\rFORGED"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"items", "ls"},
		{"items", "show", it.ID},
		{"attention", "ls"},
		{"history"},
		{"events"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			r := e.run(e.humanToken, nil, args...)
			if r.code != 0 {
				t.Fatalf("workgraph %s: %v", strings.Join(args, " "), r)
			}
			for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				if i, bad := controls(out); bad {
					t.Errorf("workgraph %s: %s has control byte %#x at %d: %q", strings.Join(args, " "), name, out[i], i, out[max(0, i-20):min(len(out), i+20)])
				}
			}
			if !strings.Contains(r.stdout, "RED") {
				t.Errorf("workgraph %s: the text itself is gone:\n%s", strings.Join(args, " "), r.stdout)
			}
		})
	}
	t.Run("WorkPassesTheCommandsOutput", func(t *testing.T) {
		// The output of the command `work` runs is the worker's own,
		// passed on as it is (a test runner's colours).
		e.item("Colourful")
		r := e.run(e.agentToken, nil, "work", "--", "sh", "-c", `printf '\033[1mbold\033[0m\n'`)
		if r.code != 0 || !strings.Contains(r.stdout, "\x1b[1mbold\x1b[0m") {
			t.Fatalf("work: want the command's escape sequences as it wrote them\n%v", r)
		}
	})
	t.Run("JSONExact", func(t *testing.T) {
		var got client.Item
		e.mustJSON(e.humanToken, &got, "items", "show", it.ID)
		if got.Title != evil {
			t.Errorf("--json title = %q, want %q", got.Title, evil)
		}
	})
}
