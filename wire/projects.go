package wire

import "time"

// Project is the unit of tenancy (schema Project).
type Project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// OnExpiry is the default of the project's items that name none
	// (OnExpiryRetry or OnExpiryReconcile).
	OnExpiry string `json:"on_expiry"`
	// AttentionDueInSeconds is the deadline of a worker's question that
	// names none (nil: none).
	AttentionDueInSeconds *int64 `json:"attention_due_in_seconds"`
	// QuietAfterSeconds is how long a lease may heartbeat without its
	// progress changing before it is quiet.
	QuietAfterSeconds int64 `json:"quiet_after_seconds"`
	// NoProgressAfterSeconds, when set, ends a lease without progress for
	// that long with a blocking no_progress request (nil: never).
	NoProgressAfterSeconds *int64 `json:"no_progress_after_seconds"`
}

// What an expired lease means for its item (Item.OnExpiry,
// Project.OnExpiry): back to the queue, or wait for a person's decision in
// an uncertain_outcome attention request.
const (
	OnExpiryRetry     = "retry"
	OnExpiryReconcile = "reconcile"
)

// ProjectList is the projects a token can see (schema ProjectList).
type ProjectList struct {
	Projects []Project `json:"projects"`
}

// Token is an API token, never its secret (schema Token). ProjectID is
// nil for the bootstrap admin token.
type Token struct {
	ID        string     `json:"id"`
	ProjectID *string    `json:"project_id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// CreatedToken is the answer that created a token: the bearer secret,
// shown this once only, and the token (schema CreatedToken).
type CreatedToken struct {
	Secret string `json:"token"`
	Token
}

// TokenList is a project's tokens (schema TokenList).
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// IDMatch is an object of a project whose id starts with a looked-up
// prefix (schema IDMatch). Kind is item, lease, attention or token; Label
// names it for a person (an item's title, a lease's item title, an
// attention request's question, a token's name).
type IDMatch struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

// IDMatches is the answer of an id prefix lookup (schema IDMatches): every
// match, at most ten of each kind, ordered by kind then id.
type IDMatches struct {
	Matches []IDMatch `json:"matches"`
}
