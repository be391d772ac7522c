package graph

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// UpdateItem applies a person's edit and bumps the version. It never
// touches a lease (no pre-emption): a worker holding the item keeps it and
// sees the new fields on its next read. That holds for touches and
// requires too: a live lease keeps the write scopes it was granted (its
// own scopes column, which the claims' overlap test reads) and the new
// touches apply from the item's next claim, so an edit never makes two
// live leases hold overlapping scopes. On a done or cancelled item only
// labels and metadata may change. A patch with no field, or whose every
// field is as stored, changes nothing (no new version, no item.updated
// event) and returns the item as stored (after the IfVersion check).
//
// Errors: invalid_argument / payload_too_large for bad fields; not_found when
// the item is not in the project; conflict when IfVersion differs from the
// stored version, or when anything but labels and metadata of a finished
// item would change.
func (s *Service) UpdateItem(ctx context.Context, project, id uuid.UUID, p ItemPatch) (Item, error) {
	args := dbq.UpdateItemFieldsParams{ProjectID: project, ID: id, Now: s.clock.Now(), Priority: p.Priority, Body: p.Body}
	if p.Title != nil {
		t, err := cleanTitle("title", *p.Title)
		if err != nil {
			return Item{}, err
		}
		args.Title = &t
	}
	if p.Body != nil {
		if err := checkBody("body", *p.Body); err != nil {
			return Item{}, err
		}
	}
	if p.Labels != nil {
		l, err := CleanLabels("labels", *p.Labels)
		if err != nil {
			return Item{}, err
		}
		args.Labels = l // non-nil even when empty: clears the labels
	}
	if p.Requires != nil {
		l, err := CleanLabels("requires", *p.Requires)
		if err != nil {
			return Item{}, err
		}
		args.Requires = l
	}
	if p.Touches != nil {
		l, err := CleanScopes("touches", *p.Touches)
		if err != nil {
			return Item{}, err
		}
		args.Touches = l
	}
	if p.Metadata != nil {
		m, err := cleanMetadata("metadata", *p.Metadata)
		if err != nil {
			return Item{}, err
		}
		args.Metadata = json.RawMessage(m)
	}
	if p.OnExpiry != nil {
		v, err := cleanOnExpiry("on_expiry", *p.OnExpiry, true)
		if err != nil {
			return Item{}, err
		}
		args.OnExpiry = &v
	}
	empty := p.Title == nil && p.Body == nil && p.Priority == nil && p.Labels == nil && p.Metadata == nil && p.OnExpiry == nil &&
		p.Requires == nil && p.Touches == nil
	q := dbq.New()
	var out Item
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		cur, err := q.LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: id})
		if err != nil {
			if isNoRows(err) {
				return notFound("item", id)
			}
			return err
		}
		if p.IfVersion != nil && *p.IfVersion != cur.Version {
			return &wgerr.Error{Code: wgerr.CodeConflict, Field: "version",
				Message: fmt.Sprintf("the item changed meanwhile (version %d, not %d); reload and retry", cur.Version, *p.IfVersion)}
		}
		if cur.Status != string(StatusOpen) && (p.Title != nil || p.Body != nil || p.Priority != nil || p.Requires != nil || p.Touches != nil ||
			p.OnExpiry != nil) {
			return conflictf("item %s is %s: only labels and metadata can still change", id, cur.Status)
		}
		if !empty {
			changed, err := q.UpdateItemFields(ctx, tx, args)
			if err != nil {
				return err
			}
			// changed is 0 when every field given is as stored: nothing
			// was written, and nothing is told.
			if changed > 0 {
				if _, err := events.Append(ctx, tx, events.New{Project: project, Type: events.ItemUpdated, At: args.Now,
					Actor: events.ActorFrom(ctx), ItemID: &id, Payload: updatedPayload(p, args, cur.Version+1)}); err != nil {
					return err
				}
			}
		}
		out, err = getItem(ctx, tx, args.Now, project, id)
		return err
	})
	return out, err
}

// updatedPayload is the item.updated event's payload: the version the edit
// made, the names of the fields it set and the new values of the small
// ones as stored (title, priority, labels, on_expiry; body and metadata
// are named only).
func updatedPayload(p ItemPatch, args dbq.UpdateItemFieldsParams, version int32) map[string]any {
	out := map[string]any{"version": version}
	var fields []string
	if p.Title != nil {
		fields = append(fields, "title")
		out["title"] = *args.Title
	}
	if p.Body != nil {
		fields = append(fields, "body")
	}
	if p.Priority != nil {
		fields = append(fields, "priority")
		out["priority"] = *p.Priority
	}
	if p.Labels != nil {
		fields = append(fields, "labels")
		out["labels"] = args.Labels
	}
	if p.Requires != nil {
		fields = append(fields, "requires")
		out["requires"] = args.Requires
	}
	if p.Touches != nil {
		fields = append(fields, "touches")
		out["touches"] = args.Touches
	}
	if p.Metadata != nil {
		fields = append(fields, "metadata")
	}
	if p.OnExpiry != nil {
		fields = append(fields, "on_expiry")
		out["on_expiry"] = *p.OnExpiry
	}
	out["fields"] = fields
	return out
}
