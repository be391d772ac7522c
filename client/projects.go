package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/workgraph-dev/workgraph/wire"
)

// CreateProject creates a project (admin). A taken name is ErrAlreadyExists.
func (c *Client) CreateProject(ctx context.Context, name string) (*Project, error) {
	var p Project
	_, err := c.do(ctx, http.MethodPost, "/v1/projects", nil, CreateProjectRequest{Name: name}, &p)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// ListProjects lists the projects the token can see.
func (c *Client) ListProjects(ctx context.Context) ([]Project, error) {
	var out wire.ProjectList
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Projects, nil
}

// GetProject returns one project, by name or id. One the token may not
// see is ErrNotFound.
func (c *Client) GetProject(ctx context.Context, project string) (*Project, error) {
	var p Project
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project), nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreateToken mints a token of the project (admin). The secret is in
// CreatedToken.Secret and is shown only this once.
func (c *Client) CreateToken(ctx context.Context, project string, req CreateTokenRequest) (*CreatedToken, error) {
	var t CreatedToken
	_, err := c.do(ctx, http.MethodPost, "/v1/projects/"+esc(project)+"/tokens", nil, req, &t)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTokens lists the project's tokens (never their secrets).
func (c *Client) ListTokens(ctx context.Context, project string) ([]Token, error) {
	var out wire.TokenList
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/tokens", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// RevokeToken revokes a token at once.
func (c *Client) RevokeToken(ctx context.Context, project, tokenID string) error {
	_, err := c.do(ctx, http.MethodDelete, "/v1/projects/"+esc(project)+"/tokens/"+esc(tokenID), nil, nil, nil)
	return err
}

// SetProjectOnExpiry sets a project's default on_expiry (admin only).
func (c *Client) SetProjectOnExpiry(ctx context.Context, project, onExpiry string) (*Project, error) {
	var out Project
	if _, err := c.do(ctx, http.MethodPatch, "/v1/projects/"+esc(project), nil,
		UpdateProjectRequest{OnExpiry: onExpiry}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LookupIDs returns the project's objects whose id starts with prefix (at
// least 4 hex digits), of the given kinds ("item", "lease", "attention",
// "token"; none: every kind), at most ten of each kind. Tokens match for
// admin tokens only. A prefix that is not the start of an id is
// ErrInvalidArgument.
func (c *Client) LookupIDs(ctx context.Context, project, prefix string, kinds ...string) ([]IDMatch, error) {
	q := url.Values{"prefix": {prefix}}
	if len(kinds) > 0 {
		q.Set("kind", strings.Join(kinds, ","))
	}
	var out wire.IDMatches
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/ids", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Matches, nil
}

// UpdateProject changes a project's settings (admin only): on_expiry and
// the default deadline of workers' questions (attention_due_in_seconds, 0
// removes it), in one transaction.
func (c *Client) UpdateProject(ctx context.Context, project string, req UpdateProjectRequest) (*Project, error) {
	var out Project
	if _, err := c.do(ctx, http.MethodPatch, "/v1/projects/"+esc(project), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
