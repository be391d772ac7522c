package wire

import "time"

// Project is the unit of tenancy (schema Project).
type Project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

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
