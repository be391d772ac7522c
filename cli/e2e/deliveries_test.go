package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWebhookDeliveriesPaged: `webhooks deliveries` reaches every delivery
// the API pages to: --before continues after a page (the SEQ it names on
// stderr), --all fetches every page. It had --limit only, so a webhook's
// deliveries older than the newest 500 could not be listed.
func TestWebhookDeliveriesPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.run(e.humanToken, nil, "webhooks", "create", "https://hooks.example.com/wg", "--disabled")
	if r.code != 0 {
		t.Fatalf("webhooks create: %v", r)
	}
	var list struct{ Webhooks []client.Webhook }
	e.mustJSON(e.humanToken, &list, "webhooks", "ls")
	id := list.Webhooks[0].ID
	// Seven finished deliveries, of events 1..7.
	if _, err := e.pool.Exec(context.Background(), `
		INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, state, attempts, next_attempt_at, created_at, finished_at)
		SELECT w.project_id, w.id, g, 'item.created', 'failed', 1, now(), now(), now()
		FROM webhooks w, generate_series(1, 7) g WHERE w.id = $1`, id); err != nil {
		t.Fatal(err)
	}
	seqs := func(ds []client.Delivery) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprint(d.Seq))
		}
		return strings.Join(s, ",")
	}
	var page client.DeliveryList
	e.mustJSON(e.humanToken, &page, "webhooks", "deliveries", id, "--limit", "3")
	if seqs(page.Deliveries) != "7,6,5" || page.NextBefore == nil || *page.NextBefore != 5 {
		t.Fatalf("first page: %s, next_before %v", seqs(page.Deliveries), page.NextBefore)
	}
	if r := e.run(e.humanToken, nil, "webhooks", "deliveries", id, "--limit", "3"); r.code != 0 || !strings.Contains(r.stderr, "--before 5") {
		t.Fatalf("the table does not say how to go on: %v", r)
	}
	e.mustJSON(e.humanToken, &page, "webhooks", "deliveries", id, "--limit", "3", "--before", "5")
	if seqs(page.Deliveries) != "4,3,2" {
		t.Fatalf("--before 5: %s", seqs(page.Deliveries))
	}
	e.mustJSON(e.humanToken, &page, "webhooks", "deliveries", id, "--limit", "3", "--all")
	if seqs(page.Deliveries) != "7,6,5,4,3,2,1" || page.NextBefore != nil {
		t.Fatalf("--all: %s, next_before %v", seqs(page.Deliveries), page.NextBefore)
	}
	e.wantExit(e.humanToken, 2, "--before", "webhooks", "deliveries", id, "--before", "-1")
}
