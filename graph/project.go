package graph

import (
	"context"
	"errors"
	"regexp"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

var projectNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CreateProject creates a project. Names are 1 to 63 characters of a-z,
// 0-9, "_" and "-", starting with a letter or digit.
// Errors: invalid_argument for a bad name; already_exists when taken.
func (s *Service) CreateProject(ctx context.Context, name string) (Project, error) {
	if !projectNameRE.MatchString(name) {
		return Project{}, wgerr.InvalidField("name", "must be 1 to 63 characters of a-z 0-9 _ -, starting with a letter or digit")
	}
	p, err := dbq.New().CreateProject(ctx, s.pool, name)
	if err != nil {
		err = db.Translate(err)
		if errors.Is(err, wgerr.AlreadyExists) {
			return Project{}, wgerr.New(wgerr.CodeAlreadyExists, "project %q already exists", name)
		}
		return Project{}, err
	}
	return Project(p), nil
}

// Project finds a project by id or by name.
// Errors: not_found.
func (s *Service) Project(ctx context.Context, nameOrID string) (Project, error) {
	q := dbq.New()
	var (
		p   dbq.Project
		err error
	)
	if id, perr := uuid.Parse(nameOrID); perr == nil {
		p, err = q.GetProject(ctx, s.pool, id)
	} else {
		p, err = q.GetProjectByName(ctx, s.pool, nameOrID)
	}
	if err != nil {
		if isNoRows(err) {
			return Project{}, wgerr.New(wgerr.CodeNotFound, "project %q not found", nameOrID)
		}
		return Project{}, db.Translate(err)
	}
	return Project(p), nil
}

// ListProjects lists every project by name.
func (s *Service) ListProjects(ctx context.Context) ([]Project, error) {
	rows, err := dbq.New().ListProjects(ctx, s.pool)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Project, len(rows))
	for i, p := range rows {
		out[i] = Project(p)
	}
	return out, nil
}
