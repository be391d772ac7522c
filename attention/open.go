package attention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Input bounds.
const (
	maxQuestionBytes  = 65536
	maxSuggested      = 20
	maxSuggestedBytes = 1000
	maxByBytes        = 200
)

// defaultHoldQuestion is the question of a hold a person gave no text for.
const defaultHoldQuestion = "On hold: do not start until a person releases it."

// Open opens an attention request on an open item, in one transaction (a
// savepoint of the caller's when s is On it). A blocking request holds the item (items.open_attention++)
// and records in.Worker as its pending continuity preference. A worker's
// request must be fenced by the caller (package lease locks or ends the
// lease in the caller's transaction first, and runs Open On it).
//
// Errors: invalid_argument (a field, named), not_found (no such item in the
// project), conflict (the item is done or cancelled).
func (s *Service) Open(ctx context.Context, project, itemID uuid.UUID, in NewRequest) (Request, error) {
	in, err := clean(in)
	if err != nil {
		return Request{}, err
	}
	var out Request
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		out, err = open(ctx, tx, nowOf(s.clock), project, itemID, in)
		return err
	})
	return out, err
}

func open(ctx context.Context, tx pgx.Tx, now nowArg, project, itemID uuid.UUID, in NewRequest) (Request, error) {
	q := dbq.New()
	if in.Source == SourcePerson {
		// The item's state changes before the request's row (which names
		// its actor for the events of the rest of the transaction) exists.
		if err := events.SetActor(ctx, tx, in.RequestedBy); err != nil {
			return Request{}, err
		}
	}
	title, err := holdOrCheck(ctx, q, tx, now, project, itemID, in)
	if err != nil {
		return Request{}, err
	}
	row, err := q.InsertAttention(ctx, tx, dbq.InsertAttentionParams{
		ProjectID:        project,
		ItemID:           itemID,
		LeaseID:          in.LeaseID,
		Epoch:            in.Epoch,
		Source:           in.Source,
		Reason:           in.Reason,
		RequestedBy:      in.RequestedBy,
		Question:         in.Question,
		SuggestedAnswers: in.SuggestedAnswers,
		Context:          in.Context,
		Blocking:         in.Blocking,
		DueMs:            dueMs(in.DueIn),
		OnOverdue:        optString(in.OnOverdue),
		DefaultAnswer:    optString(in.DefaultAnswer),
		Now:              now,
		MaxOpen:          maxOpen(in),
	})
	if errors.Is(err, pgx.ErrNoRows) && maxOpen(in) != nil {
		// The statement's guard: the lease has MaxOpenOnLease open
		// non-blocking requests already. Open's transaction (or savepoint)
		// rolls back whatever came before.
		return Request{}, &wgerr.Error{Code: wgerr.CodeTooManyOpenRequests,
			Message: fmt.Sprintf("lease %s already has %d open non-blocking attention requests (the limit): "+
				"wait for a person to answer one (the answers come back on heartbeats), or ask a blocking question",
				in.LeaseID, in.MaxOpenOnLease),
			Details: map[string]any{"lease_id": in.LeaseID.String(), "max_open_requests": in.MaxOpenOnLease}}
	}
	if db.Violates(err, "attention_requests_overdue_policy") {
		// A worker's question without due_in whose project sets no
		// default deadline either (the statement applies the default).
		return Request{}, wgerr.InvalidField("due_in",
			"is required by on_overdue %q: the project sets no default deadline (attention_due_in_seconds)", in.OnOverdue)
	}
	if err != nil {
		return Request{}, db.Translate(err)
	}
	return fromRow(row, title), nil
}

// holdOrCheck locks the item: a blocking request counts on it, a
// non-blocking one only checks that it is open. It returns the item's title.
func holdOrCheck(ctx context.Context, q *dbq.Queries, tx pgx.Tx, now nowArg, project, itemID uuid.UUID, in NewRequest) (string, error) {
	if in.Blocking {
		title, err := q.HoldItemForAttention(ctx, tx, dbq.HoldItemForAttentionParams{
			ProjectID: project, ItemID: itemID, Worker: in.Worker, WorkerToken: in.WorkerToken, Now: now,
		})
		if err == nil {
			return title, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return "", db.Translate(err)
		}
	}
	it, err := q.ItemForAttention(ctx, tx, dbq.ItemForAttentionParams{ProjectID: project, ItemID: itemID})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", wgerr.New(wgerr.CodeNotFound, "item %s not found", itemID)
	}
	if err != nil {
		return "", db.Translate(err)
	}
	if it.Status != "open" {
		return "", wgerr.New(wgerr.CodeConflict, "item %s is %s: no attention request can be opened on it", itemID, it.Status)
	}
	return it.Title, nil
}

// Hold opens a person's blocking request on an open item ("do not start this
// until I say"). It does not end an active lease (no pre-emption), but once
// that lease ends the item is not claimable until the hold is resolved or
// dismissed. An empty question gets a standard text. A person holds an item
// at most once (the database refuses a second open hold, index
// attention_one_open_hold): when by holds it already, that hold is
// returned and nothing changes (HoldOnce says which).
//
// Errors: invalid_argument, not_found (item), conflict (item finished).
func (s *Service) Hold(ctx context.Context, project, itemID uuid.UUID, question, by string) (Request, error) {
	req, _, err := s.HoldOnce(ctx, project, itemID, question, by)
	return req, err
}

// HoldOnce is Hold that says whether it opened the hold: when by has an
// open hold on the item (the web UI's Hold button pressed twice, an API
// call sent again), that hold is returned (created false) and nothing
// changes; else a hold is opened (created true). The item's row lock,
// taken first, orders it with every blocking request opened on the item,
// so two at once by the same person open one hold; the unique index
// attention_one_open_hold refuses a second should any path not take it.
//
// Errors: as Hold.
func (s *Service) HoldOnce(ctx context.Context, project, itemID uuid.UUID, question, by string) (req Request, created bool, err error) {
	if Blank(question) {
		question = defaultHoldQuestion
	}
	in, err := clean(NewRequest{Question: question, Blocking: true, Source: SourcePerson, Reason: ReasonHold, RequestedBy: by})
	if err != nil {
		return Request{}, false, err
	}
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		q := dbq.New()
		if _, err := q.LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: itemID}); errors.Is(err, pgx.ErrNoRows) {
			return wgerr.New(wgerr.CodeNotFound, "item %s not found", itemID)
		} else if err != nil {
			return db.Translate(err)
		}
		held, err := q.OpenHoldBy(ctx, tx, dbq.OpenHoldByParams{ProjectID: project, ItemID: itemID, RequestedBy: in.RequestedBy})
		switch {
		case err == nil:
			req = fromRow(held.AttentionRequest, held.ItemTitle)
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return db.Translate(err)
		}
		req, err = open(ctx, tx, nowOf(s.clock), project, itemID, in)
		created = err == nil
		return err
	})
	return req, created, err
}

// clean validates a NewRequest and fills its defaults.
func clean(in NewRequest) (NewRequest, error) {
	in.Question = strings.TrimSpace(in.Question)
	switch {
	case Blank(in.Question):
		return in, wgerr.InvalidField("question", "must not be empty")
	case len(in.Question) > maxQuestionBytes:
		return in, wgerr.InvalidField("question", "must be at most %d bytes", maxQuestionBytes)
	}
	if err := input.Prose("question", in.Question); err != nil {
		return in, err
	}
	if len(in.SuggestedAnswers) > maxSuggested {
		return in, wgerr.InvalidField("suggested_answers", "at most %d answers", maxSuggested)
	}
	answers := make([]string, 0, len(in.SuggestedAnswers))
	for i, a := range in.SuggestedAnswers {
		a = strings.TrimSpace(a)
		if Blank(a) || len(a) > maxSuggestedBytes || !utf8.ValidString(a) {
			return in, wgerr.InvalidField("suggested_answers", "each answer must be 1 to %d bytes of UTF-8", maxSuggestedBytes)
		}
		// A suggested answer is a button a person clicks: one line.
		if err := input.Line(fmt.Sprintf("suggested_answers[%d]", i), a); err != nil {
			return in, err
		}
		answers = append(answers, a)
	}
	in.SuggestedAnswers = answers
	if len(in.Context) > 0 {
		if !json.Valid(in.Context) {
			return in, wgerr.InvalidField("context", "must be valid JSON")
		}
		if string(in.Context) == "null" {
			in.Context = nil
		}
	}
	if in.Source == "" {
		in.Source = SourceWorker
	}
	if in.Source != SourceWorker && in.Source != SourceSystem && in.Source != SourcePerson {
		return in, wgerr.InvalidField("source", "must be worker, system or person")
	}
	if in.Reason == "" {
		in.Reason = ReasonQuestion
	}
	switch in.Reason {
	case ReasonQuestion, ReasonRepeatedExpiry, ReasonRepeatedFailure, ReasonHold, ReasonUncertainOutcome,
		ReasonBudgetExhausted, ReasonNoProgress:
	default:
		return in, wgerr.InvalidField("reason", "unknown reason %q", in.Reason)
	}
	in.RequestedBy = strings.TrimSpace(in.RequestedBy)
	if in.RequestedBy == "" || len(in.RequestedBy) > maxByBytes {
		return in, wgerr.InvalidField("requested_by", "must be 1 to %d bytes", maxByBytes)
	}
	if (in.LeaseID == nil) != (in.Epoch == nil) {
		return in, wgerr.InvalidField("epoch", "a lease id and its epoch go together")
	}
	if len(in.Worker) > maxByBytes {
		return in, wgerr.InvalidField("worker", "must be at most %d bytes", maxByBytes)
	}
	if in.Worker == "" {
		in.WorkerToken = nil
	}
	return cleanDeadline(in)
}

// MaxDue bounds a request's deadline: a year.
const MaxDue = 365 * 24 * time.Hour

// cleanDeadline checks the deadline fields. A policy needs a deadline (the
// request's own, or for a worker's question the project's, which the
// database applies: a policy without either is refused there too);
// default_answer needs the answer, and the answer that policy (anything
// else would never use it), release a blocking request.
func cleanDeadline(in NewRequest) (NewRequest, error) {
	if in.DueIn < 0 || (in.DueIn > 0 && in.DueIn < time.Second) || in.DueIn > MaxDue {
		return in, wgerr.InvalidField("due_in", "must be 1 s to %s", MaxDue)
	}
	in.DefaultAnswer = strings.TrimSpace(in.DefaultAnswer)
	if len(in.DefaultAnswer) > maxAnswerBytes || !utf8.ValidString(in.DefaultAnswer) {
		return in, wgerr.InvalidField("default_answer", "must be at most %d bytes of UTF-8", maxAnswerBytes)
	}
	if err := input.Prose("default_answer", in.DefaultAnswer); err != nil {
		return in, err
	}
	if in.DefaultAnswer != "" && in.OnOverdue != OverdueDefaultAnswer {
		// Kept, it would never be used: the asker meant the policy.
		return in, wgerr.InvalidField("default_answer", "applies only with on_overdue %q (got %q)", OverdueDefaultAnswer, in.OnOverdue)
	}
	switch in.OnOverdue {
	case "", OverdueEscalate:
	case OverdueDefaultAnswer:
		if in.DefaultAnswer == "" {
			return in, wgerr.InvalidField("default_answer", "is required by on_overdue %q", in.OnOverdue)
		}
	case OverdueRelease:
		if !in.Blocking {
			return in, wgerr.InvalidField("on_overdue", "release applies to a blocking request only")
		}
	default:
		return in, wgerr.InvalidField("on_overdue", "must be escalate, default_answer or release")
	}
	if in.OnOverdue != "" && in.DueIn == 0 && in.Source != SourceWorker {
		return in, wgerr.InvalidField("due_in", "is required by on_overdue")
	}
	return in, nil
}

// maxOpen is InsertAttention's bound on the lease's open non-blocking
// requests (nil: none).
func maxOpen(in NewRequest) *int32 {
	if in.MaxOpenOnLease <= 0 || in.LeaseID == nil {
		return nil
	}
	n := int32(in.MaxOpenOnLease)
	return &n
}

func dueMs(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
