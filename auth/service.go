package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// DefaultProject is the project a first start creates.
const DefaultProject = "default"

// Service mints, verifies, lists and revokes tokens.
type Service struct {
	pool  db.Executor
	clock clock.Clock
	q     *dbq.Queries
	// verified remembers the tokens Authenticate accepted, for Lazy.
	verified *verified
}

// NewService returns a Service on exec (a pool, or a caller's transaction);
// a nil clock means the database's.
func NewService(pool db.Executor, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{pool: pool, clock: clk, q: dbq.New(), verified: &verified{}}
}

// Create mints a token (event token.created, by ctx's events.ActorFrom) and returns it with its bearer string, which is
// shown once and never stored. Every role but admin needs a project.
//
// A token's name is unique in its project, revoked tokens included: it is
// the token's principal in history (token:NAME), so it never stands for two
// tokens. Admin tokens of no project are outside this rule.
//
// Errors: invalid_argument (name, role, missing project), not_found (the
// project does not exist), already_exists (a token of the project has this
// name).
func (s *Service) Create(ctx context.Context, projectID *uuid.UUID, name string, role Role) (Token, string, error) {
	if err := validate(name, role, projectID); err != nil {
		return Token{}, "", err
	}
	id := uuid.New()
	bearer := newBearer(id)
	var row dbq.Token
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := events.SetActor(ctx, tx, ""); err != nil {
			return err
		}
		var err error
		row, err = s.q.InsertToken(ctx, tx, dbq.InsertTokenParams{
			ID: id, ProjectID: projectID, Name: name, Role: string(role), SecretHash: hashBearer(bearer),
		})
		return err
	})
	if err != nil {
		err = db.Translate(err)
		if errors.Is(err, wgerr.NotFound) {
			return Token{}, "", wgerr.New(wgerr.CodeNotFound, "project %s not found", projectID)
		}
		if errors.Is(err, wgerr.AlreadyExists) {
			return Token{}, "", &wgerr.Error{Code: wgerr.CodeAlreadyExists, Field: "name",
				Message: fmt.Sprintf("a token named %q already exists in this project (revoked tokens keep their names, which history refers to): choose another name", name)}
		}
		return Token{}, "", err
	}
	return fromRow(row), bearer, nil
}

func validate(name string, role Role, projectID *uuid.UUID) error {
	if strings.TrimSpace(name) == "" {
		return wgerr.InvalidField("name", "must not be empty")
	}
	if len(name) > 200 {
		return wgerr.InvalidField("name", "must be at most 200 characters")
	}
	if err := input.Line("name", name); err != nil {
		// It is the principal ("token:<name>") that history, events and
		// logs show.
		return err
	}
	if err := distinctName(name); err != nil {
		return err
	}
	if !role.Valid() {
		return wgerr.InvalidField("role", "must be one of admin, human, agent")
	}
	if role != RoleAdmin && projectID == nil {
		return wgerr.InvalidField("project", "a %s token belongs to a project", role)
	}
	return nil
}

// Authenticate returns the principal of a bearer string. It reads the
// token's row on every call (one primary-key lookup), so a revocation
// committed on any replica, or written straight into the database,
// refuses the very next request everywhere. It remembers a token it
// accepted for Lazy, whose check in the request's first statement keeps
// that promise.
//
// Errors: unauthenticated (unknown, malformed or revoked token).
func (s *Service) Authenticate(ctx context.Context, bearer string) (Principal, error) {
	if bearer == "" {
		return Principal{}, wgerr.New(wgerr.CodeUnauthenticated, "missing bearer token")
	}
	hash := hashBearer(bearer)
	var (
		row dbq.Token
		err = pgx.ErrNoRows
	)
	id, ok := parseBearer(bearer)
	if ok {
		row, err = s.q.GetToken(ctx, s.pool, id)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		row, err = s.q.GetTokenByHash(ctx, s.pool, hash)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// Deleted: Remembers no longer vouches for it.
		if ok {
			s.verified.drop(id)
		} else {
			s.verified.dropHash(hash)
		}
		return Principal{}, wgerr.New(wgerr.CodeUnauthenticated, "unknown token")
	}
	if err != nil {
		return Principal{}, db.Translate(err)
	}
	// A wrong secret leaves the memory alone: a guess that names a real
	// token's id must not make the replica forget the real one.
	if !sameHash(row.SecretHash, hash) {
		return Principal{}, wgerr.New(wgerr.CodeUnauthenticated, "unknown token")
	}
	if row.RevokedAt != nil {
		s.verified.drop(row.ID) // revoked on another replica: forget it here too
		return Principal{}, wgerr.New(wgerr.CodeUnauthenticated, "the token has been revoked")
	}
	p := Principal{TokenID: row.ID, Name: row.Name, Role: Role(row.Role), ProjectID: row.ProjectID}
	s.verified.put(verifiedToken{hash: hash, principal: p})
	return p, nil
}

// List returns the tokens of a project (without secrets), oldest first.
func (s *Service) List(ctx context.Context, projectID uuid.UUID) ([]Token, error) {
	rows, err := s.q.ListProjectTokens(ctx, s.pool, &projectID)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Revoke revokes a token of the project at once (event token.revoked, by
// ctx's events.ActorFrom). Revoking a revoked token
// changes nothing and succeeds.
//
// Errors: not_found (no such token in the project).
func (s *Service) Revoke(ctx context.Context, projectID, id uuid.UUID) (Token, error) {
	var row dbq.Token
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := events.SetActor(ctx, tx, ""); err != nil {
			return err
		}
		var err error
		row, err = s.q.RevokeToken(ctx, tx, dbq.RevokeTokenParams{ID: id, ProjectID: &projectID, Now: s.clock.Now()})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, wgerr.New(wgerr.CodeNotFound, "token %s not found", id)
	}
	if err != nil {
		return Token{}, db.Translate(err)
	}
	s.verified.drop(id)
	return fromRow(row), nil
}

// EnsureBootstrap makes sure an admin token whose bearer string is exactly
// bearer exists, creating it (named "bootstrap", in no project) when it does
// not. Safe to run from several replicas at once. It reports whether it
// created the token; a revoked bootstrap token stays revoked (revoked is
// false only when it is usable).
func (s *Service) EnsureBootstrap(ctx context.Context, bearer string) (created, revoked bool, err error) {
	if bearer == "" {
		return false, false, wgerr.InvalidField("bootstrap_token", "must not be empty")
	}
	n, err := s.q.InsertTokenIfAbsent(ctx, s.pool, dbq.InsertTokenIfAbsentParams{
		ID: uuid.New(), Name: "bootstrap", Role: string(RoleAdmin), SecretHash: hashBearer(bearer),
	})
	if err != nil {
		return false, false, db.Translate(err)
	}
	row, err := s.q.GetTokenByHash(ctx, s.pool, hashBearer(bearer))
	if err != nil {
		return false, false, db.Translate(err)
	}
	return n == 1, row.RevokedAt != nil || Role(row.Role) != RoleAdmin, nil
}

// FirstStart runs on every start without a bootstrap token: when the
// database holds no token at all, it creates the project "default" (unless
// it exists) and an admin token named "admin" in it, and returns the bearer
// string, to be shown once. Otherwise it returns "". Replicas starting at
// once serialise on an advisory lock, so only one creates the token.
func (s *Service) FirstStart(ctx context.Context) (string, error) {
	var bearer string
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		bearer = ""
		if err := s.q.LockFirstStart(ctx, tx); err != nil {
			return err
		}
		n, err := s.q.CountTokens(ctx, tx)
		if err != nil || n > 0 {
			return err
		}
		project, err := s.q.GetProjectByName(ctx, tx, DefaultProject)
		if errors.Is(err, pgx.ErrNoRows) {
			project, err = s.q.CreateProject(ctx, tx, DefaultProject)
		}
		if err != nil {
			return err
		}
		id := uuid.New()
		b := newBearer(id)
		if _, err := s.q.InsertToken(ctx, tx, dbq.InsertTokenParams{
			ID: id, ProjectID: &project.ID, Name: "admin", Role: string(RoleAdmin), SecretHash: hashBearer(b),
		}); err != nil {
			return err
		}
		bearer = b
		return nil
	})
	return bearer, err
}

func fromRow(r dbq.Token) Token {
	return Token{ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, Role: Role(r.Role), CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt}
}

// distinctName refuses a token name that reads as another: names are
// unique in a project so that the principal history shows ("token:<name>")
// names one token, and "agent-1 ", " agent-1" or "agent-1" with a no-break
// space would each read as "agent-1". Spaces inside a name are plain
// spaces (U+0020), and none begins or ends it.
func distinctName(name string) error {
	if strings.TrimSpace(name) != name {
		return wgerr.InvalidField("name", "must not begin or end with a space")
	}
	for i, r := range name {
		if unicode.IsSpace(r) && r != ' ' {
			return wgerr.InvalidField("name", "must not contain %U (a space other than U+0020, which reads as one), found at character %d", r, utf8.RuneCountInString(name[:i])+1)
		}
	}
	return nil
}
