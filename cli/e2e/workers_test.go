package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWorkersCommand: `workers` lists the project's workers a page at a
// time in name order (--limit, --cursor, --all), each once.
func TestWorkersCommand(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 5
	for i := range n {
		if _, err := e.human.CreateItem(ctx, e.project, client.CreateItemRequest{Title: fmt.Sprintf("task %d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: fmt.Sprintf("bot-%d", n-1-i)}); err != nil {
			t.Fatal(err)
		}
	}
	var first client.Workers
	e.mustJSON(e.humanToken, &first, "workers", "--limit", "2")
	if len(first.Workers) != 2 || first.Workers[0].Worker != "bot-0" || first.NextCursor == nil || len(first.Active) != 2 {
		t.Fatalf("workers --limit 2: %+v", first)
	}
	r := e.run(e.humanToken, nil, "workers", "--limit", "2", "--cursor", *first.NextCursor)
	if r.code != 0 || !strings.Contains(r.stdout, "bot-2") || !strings.Contains(r.stdout, "bot-3") || strings.Contains(r.stdout, "bot-0") ||
		!strings.Contains(r.stderr, "more workers: --cursor") {
		t.Fatalf("workers --cursor: %v", r)
	}
	var all client.Workers
	e.mustJSON(e.humanToken, &all, "workers", "--limit", "2", "--all")
	var names []string
	for _, w := range all.Workers {
		names = append(names, w.Worker)
	}
	if strings.Join(names, ",") != "bot-0,bot-1,bot-2,bot-3,bot-4" || all.NextCursor != nil || len(all.Active) != n {
		t.Fatalf("workers --all: %v, next %v, %d live leases", names, all.NextCursor, len(all.Active))
	}
}
