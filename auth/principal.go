package auth

import (
	"time"

	"github.com/google/uuid"
)

// Role is what a token may do.
type Role string

// The roles. admin may do everything in every project; human manages items,
// dependencies, cancellations, attention requests and reads history; agent
// claims work, mutates its leases, creates items and dependencies and reads.
const (
	RoleAdmin Role = "admin"
	RoleHuman Role = "human"
	RoleAgent Role = "agent"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool {
	return r == RoleAdmin || r == RoleHuman || r == RoleAgent
}

// Principal is the authenticated caller of a request.
type Principal struct {
	TokenID uuid.UUID
	Name    string
	Role    Role
	// ProjectID is the one project a human or agent token belongs to; an
	// admin token may have none.
	ProjectID *uuid.UUID
}

// String is the principal as recorded in created_by, lease principals and
// attention requests: "token:<name>".
func (p Principal) String() string { return "token:" + p.Name }

// IsAdmin reports whether p may do everything everywhere.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// CanSee reports whether p may see resources of the project: admins see
// every project, everyone else only their own.
func (p Principal) CanSee(projectID uuid.UUID) bool {
	return p.IsAdmin() || (p.ProjectID != nil && *p.ProjectID == projectID)
}

// Has reports whether p's role is one of roles (admin always is).
func (p Principal) Has(roles ...Role) bool {
	if p.IsAdmin() {
		return true
	}
	for _, r := range roles {
		if p.Role == r {
			return true
		}
	}
	return false
}

// Token is a stored token, without its secret.
type Token struct {
	ID        uuid.UUID
	ProjectID *uuid.UUID
	Name      string
	Role      Role
	CreatedAt time.Time
	RevokedAt *time.Time
}
