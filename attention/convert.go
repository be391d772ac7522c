package attention

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// nowArg is the instant queries treat as now; nil means the database's.
type nowArg = *time.Time

func nowOf(clk clock.Clock) nowArg {
	if clk == nil {
		return nil
	}
	return clk.Now()
}

func fromRow(r dbq.AttentionRequest, itemTitle string) Request {
	answers := r.SuggestedAnswers
	if answers == nil {
		answers = []string{}
	}
	return Request{
		ID:               r.ID,
		ProjectID:        r.ProjectID,
		ItemID:           r.ItemID,
		ItemTitle:        itemTitle,
		LeaseID:          r.LeaseID,
		Epoch:            r.Epoch,
		Source:           r.Source,
		Reason:           r.Reason,
		RequestedBy:      r.RequestedBy,
		Question:         r.Question,
		SuggestedAnswers: answers,
		Context:          r.Context,
		Blocking:         r.Blocking,
		State:            State(r.State),
		Answer:           r.Answer,
		ResolvedBy:       r.ResolvedBy,
		ResolvedAt:       r.ResolvedAt,
		CreatedAt:        r.CreatedAt,
	}
}

// Page sizes.
const (
	defaultLimit = 50
	maxLimit     = 500
)

func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return defaultLimit, nil
	case limit < 0 || limit > maxLimit:
		return 0, wgerr.InvalidField("limit", "must be between 1 and %d", maxLimit)
	}
	return limit, nil
}

// A cursor is the opaque form of the last sequence number a page showed.
func encodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("a" + strconv.FormatInt(seq, 10)))
}

func decodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil && len(b) > 1 && b[0] == 'a' {
		if seq, err := strconv.ParseInt(string(b[1:]), 10, 64); err == nil && seq > 0 {
			return seq, nil
		}
	}
	return 0, wgerr.InvalidField("cursor", "not a cursor this list gave out")
}
