package events

import (
	"context"

	"github.com/workgraph-dev/workgraph/db"
)

type actorKey struct{}

// WithActor returns ctx carrying actor ("token:<name>", "worker:<id>",
// "system"): who the changes made on ctx's behalf are by. The API sets it
// from the request's principal, the web UI from the session's.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor ctx carries, or SystemActor.
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return SystemActor
}

// SetActor names the actor of the changes tx makes whose rows do not record
// one (an item's state, a token), for the event triggers of the rest of
// the transaction (docs/adr/0006-event-log.md). actor "" means
// ActorFrom(ctx). Lease and attention rows set it themselves, so a worker's
// calls never need it (the hot path keeps its statements).
func SetActor(ctx context.Context, tx db.DBTX, actor string) error {
	if actor == "" {
		actor = ActorFrom(ctx)
	}
	return db.Translate(q.SetEventActor(ctx, tx, actor))
}
