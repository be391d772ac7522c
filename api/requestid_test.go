package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/server"
)

// TestRequestIDInEveryLine: with JSON logs, every line a failed request
// logs (its "internal error" and its "request" line) names the request id
// once, the same id as the X-Request-Id header and the problem's
// request_id, whether the caller sent it or the server made it up.
func TestRequestIDInEveryLine(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	log, err := logs.New(out, logs.FormatJSON, slog.LevelDebug)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh database: the test renames a column, a change of the
	// schema that a reused database would hand to the next test.
	e := setup(t, func(c *server.Config) { c.Logger = log; c.DatabaseURL = dbtest.FreshURL(t) })
	if _, err := e.pool.Exec(context.Background(), "ALTER TABLE projects RENAME COLUMN name TO name_was"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []reqOpt
	}{
		{"CallersID", []reqOpt{withHeader("X-Request-Id", "trace-json-1")}},
		{"ServersID", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", "/v1/projects", adminToken, nil, tc.opts...)
			p := r.problem(t, 500, "internal")
			id := r.header.Get("X-Request-Id")
			if id == "" || p["request_id"] != id {
				t.Fatalf("header %q, problem request_id %v", id, p["request_id"])
			}
			var mine []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if strings.Count(l, `"request_id"`) > 1 {
					t.Fatalf("request_id twice in %s", l)
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("not a JSON line: %q", l)
				}
				if m["request_id"] == id {
					mine = append(mine, m)
				}
			}
			var msgs []string
			for _, m := range mine {
				msgs = append(msgs, m["msg"].(string))
			}
			if strings.Join(msgs, ",") != "internal error,request" {
				t.Fatalf("lines with request id %s: %v; log:\n%s", id, msgs, out.String())
			}
			if mine[1]["status"] != float64(500) || mine[0]["level"] != "ERROR" {
				t.Fatalf("lines: %v", mine)
			}
		})
	}
}
