package db_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notProjectScoped lists the queries of db/queries that do not name
// project_id, each with why: on Citus (distributed by project_id, see
// docs/operations.md, "Past one machine") they run on reference or local
// tables, or by a key that is global by design. Every other query must
// name project_id, so it routes to one shard.
var notProjectScoped = map[string]string{
	// idempotency_keys: keyed by token and key (a token belongs to one
	// project); a local table of the coordinator.
	"GetIdempotentRequest":          "idempotency_keys (local table)",
	"RenewIdempotentRequest":        "idempotency_keys (local table)",
	"MarkIdempotentEffect":          "idempotency_keys (local table)",
	"MarkIdempotentClaim":           "idempotency_keys (local table)",
	"BeginIdempotentRequestCarried": "idempotency_keys (local table)",
	"MarkIdempotentClaimCarried":    "idempotency_keys (local table)",
	"FinishIdempotentRequest":       "idempotency_keys (local table)",
	"AbandonIdempotentRequest":      "idempotency_keys (local table)",
	"ReleaseIdempotentRequest":      "idempotency_keys (local table)",
	"DeleteExpiredIdempotencyKeys":  "idempotency_keys (local table)",
	// tokens: authentication looks a token up before its project is known.
	"GetToken":       "tokens (reference table)",
	"GetTokenByHash": "tokens (reference table)",
	"CountTokens":    "tokens (reference table)",
	"LockFirstStart": "an advisory lock on the coordinator, no table",
	"LockToken":      "an advisory lock on the token, no table",
	"PlanEachSearch": "a setting of the transaction, no table",
	// CountActiveForToken counts a token's live leases; its token belongs
	// to one project, but the query names the token only.
	"CountActiveForToken": "leases by token (to carry project_id before Citus)",
	// fence_keys: the one signing key of the deployment.
	"EventsLastNumber":       "the events sequence, no table (the horizon: events.Horizon)",
	"EventsWriters":          "pg_locks, no table of the project (the horizon: events.Horizon)",
	"EventsWritersRunning":   "pg_locks, no table of the project (the horizon: events.Horizon)",
	"SetEventActor":          "a setting of the transaction, no table (events.SetActor)",
	"EnableEventDeletion":    "a setting of the transaction, no table (the retention service)",
	"EventsPrunedThroughAll": "events_pruned across projects (an admin's read over every project)",
	"EnableDeliveryDeletion": "a setting of the transaction, no table (the deliveries' retention service)",
	"GetFenceKey":            "fence_keys (reference table: one key per deployment)",
	"InsertFenceKey":         "fence_keys (reference table: one key per deployment)",
	"ListFenceKeys":          "fence_keys (reference table: the deployment's keys)",
	"RotateFenceKey":         "fence_keys (reference table: the deployment's keys)",
	// projects: the list of projects itself.
	"CreateProject":          "projects (reference table)",
	"GetProject":             "projects (reference table)",
	"GetProjectByName":       "projects (reference table)",
	"ListProjects":           "projects (reference table)",
	"SetProjectOnExpiry":     "projects (reference table)",
	"SetProjectAttentionDue": "projects (reference table)",
	"SetProjectProgress":     "projects (reference table)",
	// webhooks: the delivery loop's cheap check before it waits for a
	// horizon; each fan-out and claim then runs in one project.
	"WebhooksBehindAny": "webhooks across projects (a read before each fan-out round)",
	// web_sessions: a browser session before and across projects.
	"CreateWebSession":         "web_sessions (local table)",
	"DeleteWebSession":         "web_sessions (local table)",
	"DeleteExpiredWebSessions": "web_sessions (local table)",
}

var (
	// writes finds a statement that changes rows.
	writes = regexp.MustCompile(`(?i)\b(UPDATE|INSERT|DELETE)\b`)
	// projectParam finds the project given as a parameter (one, or the
	// project_ids of a batch within one project).
	projectParam = regexp.MustCompile(`@project_ids?\b|sqlc\.n?arg\('project_ids?'\)`)
)

// withoutComments is a query's text without its "--" comments.
func withoutComments(q string) string {
	lines := strings.Split(q, "\n")
	for i, l := range lines {
		if c := strings.Index(l, "--"); c >= 0 {
			lines[i] = l[:c]
		}
	}
	return strings.Join(lines, "\n")
}

// TestQueriesCarryProject: every query in db/queries names project_id, or
// is a documented exception; an exception that now names project_id (or
// no longer exists) must leave the list. A query that writes takes its
// project as a parameter: naming the column alone lets a write join rows
// of every project (a transaction across projects, which a database
// sharded by project cannot run on one shard).
func TestQueriesCarryProject(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no queries found: %v", err)
	}
	name := regexp.MustCompile(`(?m)^-- name: (\w+)`)
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		locs := name.FindAllStringSubmatchIndex(text, -1)
		for i, loc := range locs {
			end := len(text)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			q := text[loc[2]:loc[3]]
			seen[q] = true
			body := text[loc[1]:end]
			carries := strings.Contains(body, "project_id")
			_, excepted := notProjectScoped[q]
			switch {
			case !carries && !excepted:
				t.Errorf("%s: query %s does not name project_id and is not a documented exception", f, q)
			case carries && excepted:
				t.Errorf("%s: query %s names project_id: take it off notProjectScoped", f, q)
			case !excepted && writes.MatchString(withoutComments(body)) && !projectParam.MatchString(body):
				// Naming the column is not enough for a write: one that
				// joins rows by their project_id but takes none as a
				// parameter writes across projects in one transaction.
				t.Errorf("%s: query %s writes without a project parameter (@project_id): "+
					"every transaction stays inside one project; find the projects first, then write in each", f, q)
			}
		}
	}
	for q := range notProjectScoped {
		if !seen[q] {
			t.Errorf("notProjectScoped lists %s, which is no query in db/queries", q)
		}
	}
}
