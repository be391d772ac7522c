package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/workgraph-dev/workgraph/wire"
)

// The batch types are wire's.
type (
	// CompletionEntry is one lease to complete in CompleteBatch.
	CompletionEntry = wire.CompletionEntry
	// CompletionAnswer answers one entry of CompleteBatch; EntryError
	// reads its problem.
	CompletionAnswer = wire.CompletionAnswer
	// HeartbeatEntry is one lease to renew in HeartbeatBatch.
	HeartbeatEntry = wire.HeartbeatEntry
	// HeartbeatAnswer answers one entry of HeartbeatBatch.
	HeartbeatAnswer = wire.HeartbeatAnswer
)

// MaxBatch is the most items one ClaimBatch may ask for and the most
// entries of one CompleteBatch or HeartbeatBatch.
const MaxBatch = 100

// ClaimBatch claims up to max (1..MaxBatch) ready items in one call, in
// grant order; ErrNothingReady when none became ready within
// req.WaitSeconds (a long poll answers as soon as one is granted), and
// ErrNoMatch at once when ready items exist but req.Capabilities cover
// none of them. Items with write scopes are granted too, never two whose
// scopes overlap. A max outside 1..MaxBatch is the server's
// ErrInvalidArgument: max_items is sent whatever it is (a request without
// it would be a single claim, whose lease the batch answer could not hold).
func (c *Client) ClaimBatch(ctx context.Context, project string, req ClaimRequest, max int) ([]Claim, error) {
	req.MaxItems = 0
	body := struct {
		ClaimRequest
		// Shallower than ClaimRequest's omitempty member, so it wins.
		MaxItems int `json:"max_items"`
	}{req, max}
	var out wire.ClaimBatch
	status, err := c.do(ctx, http.MethodPost, "/v1/projects/"+esc(project)+"/claims", nil, body, &out,
		withExtraTimeout(time.Duration(req.WaitSeconds)*time.Second))
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent {
		return nil, ErrNothingReady
	}
	return out.Claims, nil
}

// CompleteBatch completes up to MaxBatch leases in one call: one answer per
// entry, in their order. An entry refused on its own (EntryError: lease
// lost, conflicting result, ...) does not refuse the others; the error is
// for the whole call (bad input, unreachable server). A retry is safe
// without an Idempotency-Key: completed entries answer replayed.
func (c *Client) CompleteBatch(ctx context.Context, project string, entries []CompletionEntry) ([]CompletionAnswer, error) {
	var out wire.Completions
	path := "/v1/projects/" + esc(project) + "/completions"
	if _, err := c.do(ctx, http.MethodPost, path, nil, entries, &out, selfIdempotent()); err != nil {
		return nil, err
	}
	return out.Completions, nil
}

// HeartbeatBatch renews up to MaxBatch leases in one call: one answer per
// entry, in their order, each with stop_requested and the answers to the
// lease's non-blocking requests; an entry whose lease is lost answers
// ErrLeaseLost through EntryError.
func (c *Client) HeartbeatBatch(ctx context.Context, project string, entries []HeartbeatEntry) ([]HeartbeatAnswer, error) {
	var out wire.Heartbeats
	path := "/v1/projects/" + esc(project) + "/heartbeats"
	if _, err := c.do(ctx, http.MethodPost, path, nil, entries, &out, selfIdempotent()); err != nil {
		return nil, err
	}
	return out.Heartbeats, nil
}

// EntryError is the error of one entry of a batch answer (its status and
// problem), nil when the entry succeeded. It matches the Err* sentinels as
// the single call's error would.
func EntryError(status int, problem json.RawMessage) error {
	if status >= 200 && status < 300 {
		return nil
	}
	return decodeProblem(http.MethodPost, "", status, problem)
}
