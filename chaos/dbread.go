package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// observer reads the server's own history straight from the database (not
// through the proxy) and injects the connection faults. Its connections
// carry application_name chaos-observer, so a termination spares them.
type observer struct {
	pool *pgxpool.Pool
}

const observerApp = "chaos-observer"

func openObserver(ctx context.Context, url string) (*observer, error) {
	cfg, err := pgxpool.ParseConfig(url + "&application_name=" + observerApp)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &observer{pool: pool}, nil
}

// retry runs f until it succeeds or 30 s pass: the observer itself rides
// out the faults it injects.
func (o *observer) retry(ctx context.Context, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f(ctx)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (o *observer) projectID(ctx context.Context, name string) (string, error) {
	var id string
	err := o.retry(ctx, func(ctx context.Context) error {
		return o.pool.QueryRow(ctx, `SELECT id::text FROM projects WHERE name = $1`, name).Scan(&id)
	})
	return id, err
}

// terminate is the fault: pg_terminate_backend of every server connection.
func (o *observer) terminate(ctx context.Context) (int, error) {
	var n int
	err := o.pool.QueryRow(ctx, `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
		  AND application_name <> $1`, observerApp).Scan(&n)
	return n, err
}

// history reads a project's leases and items.
func (o *observer) history(ctx context.Context, project string) ([]check.Lease, []check.Item, error) {
	var leases []check.Lease
	var items []check.Item
	err := o.retry(ctx, func(ctx context.Context) error {
		leases, items = nil, nil
		rows, err := o.pool.Query(ctx, `
			SELECT id::text, seq, item_id::text, epoch, worker, acquired_at, expires_at, ended_at, outcome, result, heartbeats
			FROM leases WHERE project_id = $1 ORDER BY seq`, project)
		if err != nil {
			return err
		}
		for rows.Next() {
			var l check.Lease
			var result []byte
			if err := rows.Scan(&l.ID, &l.Seq, &l.Item, &l.Epoch, &l.Worker, &l.AcquiredAt, &l.ExpiresAt, &l.EndedAt, &l.Outcome, &result, &l.Heartbeats); err != nil {
				rows.Close()
				return err
			}
			l.Result = json.RawMessage(result)
			leases = append(leases, l)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = o.pool.Query(ctx, `
			SELECT i.id::text, i.status, i.epoch, i.ready,
			       coalesce((SELECT array_agg(d.depends_on_id::text) FROM dependencies d
			                 WHERE d.project_id = i.project_id AND d.item_id = i.id), '{}')
			FROM items i WHERE i.project_id = $1 ORDER BY i.seq`, project)
		if err != nil {
			return err
		}
		for rows.Next() {
			var it check.Item
			if err := rows.Scan(&it.ID, &it.Status, &it.Epoch, &it.Ready, &it.DependsOn); err != nil {
				rows.Close()
				return err
			}
			items = append(items, it)
		}
		return rows.Err()
	})
	return leases, items, err
}

// events reads the project's lease.granted, lease.ended and item.created
// events, in the log's order.
func (o *observer) events(ctx context.Context, project string) ([]check.Event, error) {
	var out []check.Event
	err := o.retry(ctx, func(ctx context.Context) error {
		out = nil
		rows, err := o.pool.Query(ctx, `
			SELECT seq, type, coalesce(lease_id::text, ''), coalesce(item_id::text, ''),
			       coalesce((payload->>'epoch')::bigint, 0), coalesce(payload->>'outcome', '')
			FROM events
			WHERE project_id = $1 AND type IN ('lease.granted', 'lease.ended', 'item.created')
			ORDER BY seq`, project)
		if err != nil {
			return err
		}
		for rows.Next() {
			var e check.Event
			if err := rows.Scan(&e.Seq, &e.Type, &e.Lease, &e.Item, &e.Epoch, &e.Outcome); err != nil {
				rows.Close()
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// snapshot returns the project's ended leases as they are now.
func (o *observer) snapshot(ctx context.Context, project string) (map[string]check.Ended, error) {
	out := map[string]check.Ended{}
	err := o.retry(ctx, func(ctx context.Context) error {
		clear(out)
		rows, err := o.pool.Query(ctx, `
			SELECT id::text, ended_at, outcome, result FROM leases
			WHERE project_id = $1 AND ended_at IS NOT NULL`, project)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, outcome string
			var at time.Time
			var result []byte
			if err := rows.Scan(&id, &at, &outcome, &result); err != nil {
				return err
			}
			out[id] = check.Ended{EndedAt: at, Outcome: outcome, Result: check.NormJSON(result)}
		}
		return rows.Err()
	})
	return out, err
}

// tryRewrite tries to change an ended lease (in a transaction that is
// rolled back either way) and returns the database's refusal; nil means the
// rewrite was accepted. tried is false when there was no ended lease.
func (o *observer) tryRewrite(ctx context.Context, project string) (tried bool, refusal error, err error) {
	tx, err := o.pool.Begin(ctx)
	if err != nil {
		return false, nil, err
	}
	defer tx.Rollback(context.Background())
	var id string
	err = tx.QueryRow(ctx, `SELECT id::text FROM leases WHERE project_id = $1 AND ended_at IS NOT NULL LIMIT 1`, project).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	_, refusal = tx.Exec(ctx, `UPDATE leases SET outcome = 'released', ended_at = ended_at + interval '1 second' WHERE project_id = $1 AND id = $2`, project, id)
	if refusal == nil {
		return true, nil, nil
	}
	return true, refusal, nil
}

// openItems returns how many of the project's items are open, and the
// open ones that are stuck: not claimable for a reason other than waiting
// for an open dependency (a lease still set, an open attention request, an
// open child, or a dependency counter that disagrees with the
// dependencies' states).
func (o *observer) openItems(ctx context.Context, project string) (int, []string, error) {
	var open int
	var stuck []string
	err := o.retry(ctx, func(ctx context.Context) error {
		stuck = nil
		if err := o.pool.QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND status = 'open'`, project).Scan(&open); err != nil {
			return err
		}
		rows, err := o.pool.Query(ctx, `
			SELECT i.id::text, format('unmet_dependencies=%s (open: %s) open_children=%s open_attention=%s active_lease=%s',
			         i.unmet_dependencies, d.open_deps, i.open_children, i.open_attention, coalesce(i.active_lease_id::text, 'none'))
			FROM items i
			CROSS JOIN LATERAL (
			  SELECT count(*) FILTER (WHERE dep.status = 'open') AS open_deps
			  FROM dependencies x JOIN items dep ON dep.project_id = x.project_id AND dep.id = x.depends_on_id
			  WHERE x.project_id = i.project_id AND x.item_id = i.id) d
			WHERE i.project_id = $1 AND i.status = 'open' AND NOT i.ready
			  AND (i.active_lease_id IS NOT NULL OR i.open_attention > 0 OR i.open_children > 0
			       OR i.unmet_dependencies <> d.open_deps)`, project)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, state string
			if err := rows.Scan(&id, &state); err != nil {
				return err
			}
			stuck = append(stuck, fmt.Sprintf("%s (%s)", id, state))
		}
		return rows.Err()
	})
	return open, stuck, err
}
