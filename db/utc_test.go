package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestTimesScanInUTC: the pool's connections scan timestamptz in UTC, not
// in the process's zone (pgx's default, time.Local): a time.Time is
// encoded in its location, and every time the API emits is read here.
func TestTimesScanInUTC(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	var at time.Time
	var opt *time.Time
	if err := pool.QueryRow(context.Background(), "SELECT now(), now()").Scan(&at, &opt); err != nil {
		t.Fatal(err)
	}
	for _, x := range []time.Time{at, *opt} {
		if x.Location() != time.UTC {
			t.Errorf("scanned in %v, want UTC", x.Location())
		}
	}
}

// TestMigrationLeavesStoredEventsAlone: migration 00100 changes how the
// triggers spell payload times, not the events already in the log, which
// is append-only: payloads written before it (in whatever zone their
// session had) are what they were, and the log's guard still refuses an
// UPDATE afterwards.
func TestMigrationLeavesStoredEventsAlone(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // new: it migrates down and up
	ctx := context.Background()
	if err := db.MigrateDownTo(ctx, pool, 97); err != nil {
		t.Fatal(err)
	}
	var project string
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{
		"lease.granted":      `{"expires_at": "2026-12-07T15:03:28.602118+05:45", "worker": "w"}`,
		"attention.overdue":  `{"due_at": "2026-12-07T09:18:28+00:00"}`,
		"item.state_changed": `{"from": "leased", "to": "blocked", "retry_after": "2026-12-06T23:00:00.5-01:00"}`,
	}
	for typ, payload := range stored {
		if _, err := pool.Exec(ctx, `INSERT INTO events (project_id, type, actor, payload) VALUES ($1, $2, 'system', $3)`,
			project, typ, payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	for typ, w := range stored {
		var got json.RawMessage
		if err := pool.QueryRow(ctx, "SELECT payload FROM events WHERE type = $1", typ).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if mustCanon(t, string(got)) != mustCanon(t, w) {
			t.Errorf("%s payload %s after the migration, want it as stored: %s", typ, got, w)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE events SET actor = 'x'`); err == nil {
		t.Fatal("the log accepts an UPDATE after the migration")
	}
}

func mustCanon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
