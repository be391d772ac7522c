package graph

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// IDKind names what kind of object an id belongs to.
type IDKind string

// The kinds of object LookupIDs finds by the first characters of their id.
const (
	KindItem      IDKind = "item"
	KindLease     IDKind = "lease"
	KindAttention IDKind = "attention"
	KindToken     IDKind = "token"
)

// IDKinds are every kind LookupIDs knows, in the order it answers them.
var IDKinds = []IDKind{KindItem, KindLease, KindAttention, KindToken}

// MinIDPrefix is the fewest hex digits LookupIDs accepts: shorter prefixes
// match too much to be what a person meant.
const MinIDPrefix = 4

// MaxIDMatches is the most matches LookupIDs returns of each kind.
const MaxIDMatches = 10

// IDMatch is an object whose id starts with a looked-up prefix. Label
// names it for a person (an item's title, a lease's item title, an
// attention request's question, a token's name).
type IDMatch struct {
	Kind      IDKind
	ID        uuid.UUID
	Label     string
	CreatedAt time.Time
}

// IDPrefixRange returns the lowest and the highest id that start with
// prefix: hex digits, with or without the dashes of the printed form,
// case-insensitive.
//
// Errors: invalid_argument (field "prefix") when prefix is not the start
// of an id or has fewer than MinIDPrefix digits.
func IDPrefixRange(prefix string) (low, high uuid.UUID, err error) {
	hex := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(prefix), "-", ""))
	if len(hex) < MinIDPrefix || len(hex) > 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return uuid.Nil, uuid.Nil, wgerr.InvalidField("prefix",
			"%q is not the start of an id: give at least %d of its hex digits", prefix, MinIDPrefix)
	}
	pad := 32 - len(hex)
	low = uuid.MustParse(hex + strings.Repeat("0", pad))
	high = uuid.MustParse(hex + strings.Repeat("f", pad))
	return low, high, nil
}

// LookupIDs returns the project's objects of the given kinds (nil: every
// kind) whose id starts with prefix, at most MaxIDMatches of each kind,
// ordered by kind then id. An empty answer means nothing matched.
//
// Errors: invalid_argument (prefix, kind).
func (s *Service) LookupIDs(ctx context.Context, project uuid.UUID, prefix string, kinds []IDKind) ([]IDMatch, error) {
	low, high, err := IDPrefixRange(prefix)
	if err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		kinds = IDKinds
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		if !k.valid() {
			return nil, wgerr.InvalidField("kind", "unknown kind %q (item, lease, attention or token)", k)
		}
		names[i] = string(k)
	}
	rows, err := dbq.New().LookupIDs(ctx, s.exec, dbq.LookupIDsParams{
		ProjectID: project, Kinds: names, Low: low, High: high, MaxRows: MaxIDMatches,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]IDMatch, len(rows))
	for i, r := range rows {
		out[i] = IDMatch{Kind: IDKind(r.Kind), ID: r.ID, Label: r.Label, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

func (k IDKind) valid() bool {
	for _, x := range IDKinds {
		if k == x {
			return true
		}
	}
	return false
}
