package web

import (
	"context"

	"github.com/google/uuid"
)

// SetHook makes every layout call h first (before it runs, holding its
// slot); an error from h fails the layout, a panic in h crashes it.
func (d *Drawings) SetHook(h func(ctx context.Context, project uuid.UUID) error) { d.hook = h }

// Layouts is how many layouts ran (cache hits and summaries run none).
func (d *Drawings) Layouts() int64 { return d.layouts.Load() }
