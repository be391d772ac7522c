package graph

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

var projectNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CreateProject creates a project. Names are 1 to 63 characters of
// letters, digits, ".", "_" and "-", starting with a letter or digit, and
// may not have the form of a UUID (the API takes a project's name or id in
// the same place). Names are case-sensitive.
// Errors: invalid_argument for a bad name; already_exists when taken.
func (s *Service) CreateProject(ctx context.Context, name string) (Project, error) {
	if !projectNameRE.MatchString(name) {
		return Project{}, wgerr.InvalidField("name", "must be 1 to 63 characters of letters, digits, . _ -, starting with a letter or digit")
	}
	if _, err := uuid.Parse(name); err == nil {
		return Project{}, wgerr.InvalidField("name", "must not have the form of a UUID (projects are addressed by name or id)")
	}
	var p dbq.Project
	err := db.Atomic(ctx, s.exec, func(q db.DBTX) error {
		var err error
		p, err = dbq.New().CreateProject(ctx, q, name)
		return err
	})
	if err != nil {
		if errors.Is(err, wgerr.AlreadyExists) {
			return Project{}, wgerr.New(wgerr.CodeAlreadyExists, "project %q already exists", name)
		}
		return Project{}, err
	}
	return projectOf(p), nil
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
		p, err = q.GetProject(ctx, s.exec, id)
	} else {
		p, err = q.GetProjectByName(ctx, s.exec, nameOrID)
	}
	if err != nil {
		if isNoRows(err) {
			return Project{}, wgerr.New(wgerr.CodeNotFound, "project %q not found", nameOrID)
		}
		return Project{}, db.Translate(err)
	}
	return projectOf(p), nil
}

// SetProjectOnExpiry sets the project's default on_expiry ("retry" or
// "reconcile") for the items that name none.
// Errors: invalid_argument; not_found.
func (s *Service) SetProjectOnExpiry(ctx context.Context, project uuid.UUID, onExpiry string) (Project, error) {
	v, err := cleanOnExpiry("on_expiry", onExpiry, false)
	if err != nil {
		return Project{}, err
	}
	p, err := dbq.New().SetProjectOnExpiry(ctx, s.exec, dbq.SetProjectOnExpiryParams{ID: project, OnExpiry: v})
	if err != nil {
		if isNoRows(err) {
			return Project{}, wgerr.New(wgerr.CodeNotFound, "project %s not found", project)
		}
		return Project{}, db.Translate(err)
	}
	return projectOf(p), nil
}

// MaxAttentionDue bounds a deadline of a question (and the project's
// default): a year.
const MaxAttentionDue = 365 * 24 * time.Hour

// SetProjectAttentionDue sets the deadline a worker's question gets when
// its ask names none (0: none), from 1 s to MaxAttentionDue.
// Errors: invalid_argument; not_found.
func (s *Service) SetProjectAttentionDue(ctx context.Context, project uuid.UUID, due time.Duration) (Project, error) {
	if due < 0 || (due > 0 && due < time.Second) || due > MaxAttentionDue {
		return Project{}, wgerr.InvalidField("attention_due_in", "must be 0 (none) or 1 s to %s", MaxAttentionDue)
	}
	var ms *int64
	if due > 0 {
		v := due.Milliseconds()
		ms = &v
	}
	p, err := dbq.New().SetProjectAttentionDue(ctx, s.exec, dbq.SetProjectAttentionDueParams{ID: project, DueMs: ms})
	if err != nil {
		if isNoRows(err) {
			return Project{}, wgerr.New(wgerr.CodeNotFound, "project %s not found", project)
		}
		return Project{}, db.Translate(err)
	}
	return projectOf(p), nil
}

// ProjectPatch is a change of a project's settings; nil fields are left.
type ProjectPatch struct {
	OnExpiry       *string
	AttentionDueIn *time.Duration
	// QuietAfter (1 s to MaxAttentionDue) and NoProgressAfter (0: none, or
	// 1 s to MaxAttentionDue): see Project.
	QuietAfter      *time.Duration
	NoProgressAfter *time.Duration
}

// SetProjectProgress sets the project's quiet window and no_progress
// policy; nil leaves a setting as it is.
// Errors: invalid_argument; not_found.
func (s *Service) SetProjectProgress(ctx context.Context, project uuid.UUID, quiet, noProgress *time.Duration) (Project, error) {
	p := dbq.SetProjectProgressParams{ID: project}
	if quiet != nil {
		if *quiet < time.Second || *quiet > MaxAttentionDue {
			return Project{}, wgerr.InvalidField("quiet_after", "must be 1 s to %s", MaxAttentionDue)
		}
		v := quiet.Milliseconds()
		p.QuietAfterMs = &v
	}
	if noProgress != nil {
		if *noProgress < 0 || (*noProgress > 0 && *noProgress < time.Second) || *noProgress > MaxAttentionDue {
			return Project{}, wgerr.InvalidField("no_progress_after", "must be 0 (none) or 1 s to %s", MaxAttentionDue)
		}
		p.SetNoProgress = true
		if *noProgress > 0 {
			v := noProgress.Milliseconds()
			p.NoProgressAfterMs = &v
		}
	}
	row, err := dbq.New().SetProjectProgress(ctx, s.exec, p)
	if err != nil {
		if isNoRows(err) {
			return Project{}, wgerr.New(wgerr.CodeNotFound, "project %s not found", project)
		}
		return Project{}, db.Translate(err)
	}
	return projectOf(row), nil
}

// UpdateProject applies p in one transaction: both settings change or
// neither does.
// Errors: invalid_argument; not_found.
func (s *Service) UpdateProject(ctx context.Context, project uuid.UUID, p ProjectPatch) (Project, error) {
	var out Project
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		on := s.On(tx)
		var err error
		if p.OnExpiry != nil {
			if out, err = on.SetProjectOnExpiry(ctx, project, *p.OnExpiry); err != nil {
				return err
			}
		}
		if p.AttentionDueIn != nil {
			if out, err = on.SetProjectAttentionDue(ctx, project, *p.AttentionDueIn); err != nil {
				return err
			}
		}
		if p.QuietAfter != nil || p.NoProgressAfter != nil {
			if out, err = on.SetProjectProgress(ctx, project, p.QuietAfter, p.NoProgressAfter); err != nil {
				return err
			}
		}
		if p.OnExpiry == nil && p.AttentionDueIn == nil && p.QuietAfter == nil && p.NoProgressAfter == nil {
			out, err = on.Project(ctx, project.String())
		}
		return err
	})
	return out, err
}

func projectOf(p dbq.Project) Project {
	out := Project{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, OnExpiry: p.OnExpiry}
	if p.AttentionDueMs != nil {
		out.AttentionDueIn = time.Duration(*p.AttentionDueMs) * time.Millisecond
	}
	out.QuietAfter = time.Duration(p.QuietAfterMs) * time.Millisecond
	if p.NoProgressAfterMs != nil {
		out.NoProgressAfter = time.Duration(*p.NoProgressAfterMs) * time.Millisecond
	}
	return out
}

// ListProjects lists every project by name.
func (s *Service) ListProjects(ctx context.Context) ([]Project, error) {
	rows, err := dbq.New().ListProjects(ctx, s.exec)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Project, len(rows))
	for i, p := range rows {
		out[i] = projectOf(p)
	}
	return out, nil
}
