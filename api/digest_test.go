package api_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// digestTables are the project's stored state a refused request must leave
// alone: items, leases, attention requests, dependency edges, budgets, the
// projects' settings, webhooks and notification settings. (Not the event
// log: a refused lease mutation is recorded there on purpose.)
var digestTables = []string{"items", "leases", "attention_requests", "dependencies",
	"budgets", "projects", "webhooks", "notification_settings"}

// digest is a cheap fingerprint of the state of every project: the md5 of
// each table's rows in a fixed order.
func digest(tb testing.TB, pool *pgxpool.Pool) string {
	tb.Helper()
	out := ""
	for _, table := range digestTables {
		var sum string
		err := pool.QueryRow(context.Background(),
			`SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '-') FROM `+table+` t`).Scan(&sum)
		if err != nil {
			tb.Fatalf("digest of %s: %v", table, err)
		}
		out += table + ":" + sum + " "
	}
	return out
}
