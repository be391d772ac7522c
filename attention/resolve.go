package attention

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// maxAnswerBytes bounds an answer or a dismissal note.
const maxAnswerBytes = 65536

// Blank reports whether s shows nothing to a reader: every character is a
// space or an invisible format character (a zero width space or joiner, a
// byte order mark, a word joiner: Unicode category Cf).
func Blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }) == ""
}

// Resolve answers an open request, once. When it was the item's last open
// blocking request, the item's readiness comes back and a pending
// continuity preference gets its window, in the same transaction.
//
// Errors: invalid_argument (empty answer or by; an uncertain outcome, which
// takes a decision), not_found, conflict (the request was already resolved
// or dismissed, or it is a budget_exhausted request whose budget is still
// spent: raising the budget closes it).
func (s *Service) Resolve(ctx context.Context, project, id uuid.UUID, answer, by string) (Request, error) {
	answer = strings.TrimSpace(answer)
	if Blank(answer) {
		return Request{}, wgerr.InvalidField("answer", "must not be empty")
	}
	return s.close(ctx, project, id, StateResolved, &answer, by, nil)
}

// Dismiss closes an open request without an answer, once; note (optional)
// is kept in Answer. It releases the item like Resolve.
//
// Errors: invalid_argument (note longer than 64 KiB, by), not_found,
// conflict (already closed, or a budget_exhausted request whose budget is
// still spent).
func (s *Service) Dismiss(ctx context.Context, project, id uuid.UUID, by, note string) (Request, error) {
	note = strings.TrimSpace(note)
	if len(note) > maxAnswerBytes {
		return Request{}, wgerr.InvalidField("note", "must be at most %d bytes", maxAnswerBytes)
	}
	if err := input.Prose("note", note); err != nil {
		return Request{}, err
	}
	var notePtr *string
	if note != "" {
		notePtr = &note
	}
	return s.close(ctx, project, id, StateDismissed, notePtr, by, nil)
}

// closeOpts is what close does besides closing: decide an uncertain
// outcome (the decision is recorded with the resolution, and then acted on
// in the same transaction).
type closeOpts struct {
	decision *Decision
	reason   string // the request's reason: close refuses any other
	after    func(tx pgx.Tx, r Request) error
}

func (s *Service) close(ctx context.Context, project, id uuid.UUID, state State, answer *string, by string, opts *closeOpts) (Request, error) {
	by = strings.TrimSpace(by)
	if by == "" || len(by) > maxByBytes {
		return Request{}, wgerr.InvalidField("by", "must be 1 to %d bytes", maxByBytes)
	}
	if answer != nil && len(*answer) > maxAnswerBytes {
		return Request{}, wgerr.InvalidField("answer", "must be at most %d bytes", maxAnswerBytes)
	}
	if answer != nil {
		if err := input.Prose("answer", *answer); err != nil {
			return Request{}, err
		}
	}
	now := s.clock.Now()
	q := dbq.New()
	var out Request
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		var decision *string
		if opts != nil {
			// The reason never changes once the request is open.
			cur, err := q.AttentionState(ctx, tx, dbq.AttentionStateParams{ProjectID: project, ID: id})
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(id)
			}
			if err != nil {
				return err
			}
			if cur.Reason != opts.reason {
				return wgerr.New(wgerr.CodeConflict,
					"attention request %s is a %s request, not an %s: answer or dismiss it", id, cur.Reason, opts.reason)
			}
			decision = (*string)(opts.decision)
		}
		row, err := q.CloseAttention(ctx, tx, dbq.CloseAttentionParams{
			ProjectID: project, ID: id, State: string(state), Answer: answer, ResolvedBy: &by, Now: now,
			Decision: decision,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return s.notOpen(ctx, tx, project, id)
		}
		if err != nil {
			return db.Translate(err)
		}
		if opts == nil && row.Reason == ReasonUncertainOutcome {
			return wgerr.InvalidField("decision",
				"attention request %s is an uncertain outcome: resolve it with a decision (retry, done or cancel)", id)
		}
		if row.Reason == ReasonBudgetExhausted {
			// The budget forgets its request before raising closes it, so
			// a budget still pointing here is still spent.
			awaits, err := q.BudgetAwaitsRaise(ctx, tx, dbq.BudgetAwaitsRaiseParams{ProjectID: project, ID: id})
			if err != nil {
				return err
			}
			if awaits {
				return wgerr.New(wgerr.CodeConflict,
					"attention request %s asks for a budget: an answer would leave the budget of item %s spent and its subtree stopped; "+
						"raise the budget (on the item page, with `workgraph items budget`, or PUT /v1/projects/{project}/items/%s/budget) or cancel the item",
					id, row.ItemID, row.ItemID)
			}
		}
		if row.Blocking {
			_, err := q.ReleaseItemFromAttention(ctx, tx, dbq.ReleaseItemFromAttentionParams{
				ProjectID: project, ItemID: row.ItemID, Now: now, WindowMs: s.cfg.window().Milliseconds(),
			})
			if err != nil {
				return err
			}
		}
		if opts != nil && opts.after != nil {
			if err := opts.after(tx, fromRow(row, "")); err != nil {
				return err
			}
		}
		out, err = getRequest(ctx, tx, project, id)
		return err
	})
	return out, err
}

// notOpen explains why a request could not be closed.
func (s *Service) notOpen(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	row, err := dbq.New().AttentionState(ctx, tx, dbq.AttentionStateParams{ProjectID: project, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	if row.State == string(StateDismissed) && row.Answer != nil {
		// The dismissal's note says why (e.g. "item cancelled: ...").
		return wgerr.New(wgerr.CodeConflict, "attention request %s is already dismissed (%s)", id, *row.Answer)
	}
	return wgerr.New(wgerr.CodeConflict, "attention request %s is already %s", id, row.State)
}

func notFound(id uuid.UUID) error {
	return wgerr.New(wgerr.CodeNotFound, "attention request %s not found", id)
}
