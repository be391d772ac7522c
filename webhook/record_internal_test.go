package webhook

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestFinishDeliveredFenced: a claim's successes are recorded only for
// the rows still locked under its token at the attempt it made; a row
// whose lock passed to another attempt (another token, or a later
// attempt) is left as that attempt has it.
func TestFinishDeliveredFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.TestTx(t)
	var project uuid.UUID
	if err := tx.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('wh-fence-' || gen_random_uuid()) RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	c, err := NewService(tx, nil, true).Create(ctx, project, New{URL: "http://127.0.0.1:1/hook", CreatedBy: "token:admin"})
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := uuid.New(), uuid.New()
	// seq 1 and 2 are this claim's (2 taken again since, as attempt 2);
	// seq 3 is another claim's.
	_, err = tx.Exec(ctx, `
		INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, attempts, next_attempt_at, created_at, locked_until, lock_token)
		VALUES ($1, $2, 1, 'item.created', 1, now(), now(), now() + interval '1 minute', $3),
		       ($1, $2, 2, 'item.created', 2, now(), now(), now() + interval '1 minute', $3),
		       ($1, $2, 3, 'item.created', 1, now(), now(), now() + interval '1 minute', $4)`,
		project, c.ID, mine, theirs)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := q.FinishDelivered(ctx, tx, dbq.FinishDeliveredParams{
		ProjectID: project, LockToken: mine,
		WebhookIds: []uuid.UUID{c.ID, c.ID, c.ID}, Seqs: []int64{1, 2, 3}, Attempts: []int32{1, 1, 1},
		Statuses: []int32{204, 204, 204}, LatenciesMs: []int32{3, 3, 3}, Responses: []string{"", "ok", ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Seq != 1 {
		t.Fatalf("recorded %+v, want seq 1 only", rows)
	}
	var states []string
	var attempts int
	if err := tx.QueryRow(ctx, `SELECT array_agg(state ORDER BY seq), (SELECT count(*) FROM webhook_attempts WHERE project_id = $1)
		FROM webhook_deliveries WHERE project_id = $1`, project).Scan(&states, &attempts); err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 || states[0] != StateDelivered || states[1] != StatePending || states[2] != StatePending || attempts != 1 {
		t.Fatalf("states %v, %d attempts recorded; want delivered, pending, pending and 1", states, attempts)
	}
	var status, latency int
	var response *string
	if err := tx.QueryRow(ctx, `SELECT last_status, last_latency_ms, last_response FROM webhook_deliveries WHERE project_id = $1 AND seq = 1`,
		project).Scan(&status, &latency, &response); err != nil {
		t.Fatal(err)
	}
	if status != 204 || latency != 3 || response != nil {
		t.Fatalf("seq 1 recorded status %d, latency %d, response %v; want 204, 3, none", status, latency, response)
	}
}
