package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/db/embedpg"
	"github.com/workgraph-dev/workgraph/server"
)

// TestBackupAndRestore follows docs/operations.md, "Backups and restore":
// a database in use (a dependency released by a completion, a question
// waiting, a lease still live, events, a fence key) is dumped with
// `pg_dump -Fc` and restored with `pg_restore` into an empty database, and
// a server started on the copy carries on where the first left off: the
// same items, history and events; the history still refuses to be
// rewritten (its triggers came back with it); the event numbers go on
// after the last one; the live lease still heartbeats with its epoch; fence
// tokens are signed with the same key; and the work goes on.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	bin, err := embedpg.FindBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL client binaries: %v", err)
	}
	ctx := context.Background()
	// A database of its own: the dump must hold this test's rows only.
	source := dbtest.FreshURL(t)
	srv := start(t, func(c *server.Config) { c.DatabaseURL = source })
	agentToken := backupProject(t, srv)
	agent, err := client.New(srv.URL(), agentToken)
	if err != nil {
		t.Fatal(err)
	}

	a, err := agent.CreateItem(ctx, "kept", client.CreateItemRequest{Title: "Pick a licence"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := agent.CreateItem(ctx, "kept", client.CreateItemRequest{Title: "Write the notice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.AddDependency(ctx, "kept", b.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CreateItem(ctx, "kept", client.CreateItemRequest{Title: "Tag the release"}); err != nil {
		t.Fatal(err)
	}
	claim := func(c *client.Client) *client.Claim {
		t.Helper()
		got, err := c.Claim(ctx, "kept", client.ClaimRequest{Worker: "w1", LeaseSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := claim(agent)
	if first.Item.ID != a.ID {
		t.Fatalf("claimed %s, want the licence %s", first.Item.Title, a.ID)
	}
	if _, err := agent.Complete(ctx, first.Lease.ID, client.CompleteRequest{Epoch: first.Lease.Epoch, Result: json.RawMessage(`{"licence":"MIT"}`)}); err != nil {
		t.Fatal(err)
	}
	second := claim(agent) // the notice, released by the completion
	ask, err := agent.Ask(ctx, second.Lease.ID, client.AskRequest{Epoch: second.Lease.Epoch, Question: "Which year?"})
	if err != nil {
		t.Fatal(err)
	}
	live := claim(agent) // the release tag, left live across the backup

	before := backupState(t, srv)

	dump := filepath.Join(t.TempDir(), "workgraph.dump")
	pgTool(t, bin, "pg_dump", "-Fc", "-f", dump, "-d", source)
	target := emptyDatabase(t, "restore")
	pgTool(t, bin, "pg_restore", "--exit-on-error", "-d", target, dump)

	again := start(t, func(c *server.Config) { c.DatabaseURL = target })
	if after := backupState(t, again); !reflect.DeepEqual(before, after) {
		t.Fatalf("the restored database differs:\n before %+v\n after  %+v", before, after)
	}
	agent2, err := client.New(again.URL(), agentToken)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("HistoryStillImmutable", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `UPDATE leases SET worker = 'forged' WHERE id = $1`, first.Lease.ID)
		if err == nil {
			t.Fatal("the restored database let an ended lease be rewritten")
		}
		_, err = conn.Exec(ctx, `DELETE FROM leases WHERE id = $1`, first.Lease.ID)
		if err == nil {
			t.Fatal("the restored database let an ended lease be deleted")
		}
	})

	t.Run("LiveLeaseHeartbeats", func(t *testing.T) {
		if _, err := agent2.Heartbeat(ctx, live.Lease.ID, client.HeartbeatRequest{Epoch: live.Lease.Epoch}); err != nil {
			t.Fatalf("the lease live at the backup, after the restore: %v", err)
		}
		if _, err := agent2.Heartbeat(ctx, live.Lease.ID, client.HeartbeatRequest{Epoch: live.Lease.Epoch - 1}); err == nil {
			t.Fatal("a stale epoch heartbeat was accepted after the restore")
		}
	})

	t.Run("SameFenceKey", func(t *testing.T) {
		k1, err := agent.FenceKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := agent2.FenceKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(k1, k2) {
			t.Fatalf("fence keys before %+v, after the restore %+v", k1, k2)
		}
	})

	t.Run("WorkGoesOn", func(t *testing.T) {
		admin2, err := client.New(again.URL(), adminToken)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin2.Resolve(ctx, ask.Attention.ID, "2026"); err != nil {
			t.Fatalf("answering the question asked before the backup: %v", err)
		}
		next, err := agent2.Claim(ctx, "kept", client.ClaimRequest{Worker: "w1", LeaseSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		if next.Item.ID != b.ID || next.Lease.Epoch != second.Lease.Epoch+1 {
			t.Fatalf("claimed %s epoch %d, want the notice %s at epoch %d", next.Item.ID, next.Lease.Epoch, b.ID, second.Lease.Epoch+1)
		}
		page, err := agent2.Events(ctx, "kept", client.EventsQuery{After: before.LastEvent})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 || page.Events[0].Seq <= before.LastEvent {
			t.Fatalf("events after the restore: %+v, want numbers after %d", page.Events, before.LastEvent)
		}
	})
}

// backupSnapshot is what a restore must give back: the project's items,
// its lease history, its event log and its workers' counts.
type backupSnapshot struct {
	Items     []string
	Leases    []string
	Events    []string
	LastEvent int64
	Workers   string
}

func backupState(t *testing.T, srv *server.Server) backupSnapshot {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	var s backupSnapshot
	items, err := c.ListItems(ctx, "kept", client.ListItemsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items.Items {
		s.Items = append(s.Items, mustJSON(t, it))
	}
	leases, err := c.History(ctx, "kept", client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Leases {
		s.Leases = append(s.Leases, mustJSON(t, l))
	}
	events, err := c.Events(ctx, "kept", client.EventsQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Events {
		s.Events = append(s.Events, mustJSON(t, e))
		s.LastEvent = e.Seq
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/projects/kept/workers", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET workers: %d %s", res.StatusCode, body)
	}
	var workers struct {
		Workers json.RawMessage `json:"workers"`
	}
	if err := json.Unmarshal(body, &workers); err != nil {
		t.Fatal(err)
	}
	s.Workers = string(workers.Workers)
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// backupProject makes the project "kept" and returns an agent token of it.
func backupProject(t *testing.T, srv *server.Server) string {
	t.Helper()
	ctx := context.Background()
	admin, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, "kept", client.CreateTokenRequest{Name: "bot", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Secret
}

// pgTool runs one of PostgreSQL's client programs from dir and fails the
// test with its output when it fails.
func pgTool(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(dir, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
