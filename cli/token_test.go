package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
)

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"token", "create", "--database-url", url}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	t.Run("OK", func(t *testing.T) {
		code, out, errOut := run("--name", "ops", "--role", "admin")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		bearer := strings.TrimSpace(out)
		if !strings.HasPrefix(bearer, "wg_") {
			t.Fatalf("printed %q", out)
		}
		p, err := openAuth(t, url).Authenticate(context.Background(), bearer)
		if err != nil || p.Role != auth.RoleAdmin || p.Name != "ops" {
			t.Fatalf("principal %+v, %v", p, err)
		}
	})
	t.Run("OKNameAsArgument", func(t *testing.T) {
		code, out, errOut := run("ops-2", "--role", "admin")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		p, err := openAuth(t, url).Authenticate(context.Background(), strings.TrimSpace(out))
		if err != nil || p.Name != "ops-2" {
			t.Fatalf("principal %+v, %v", p, err)
		}
	})
	t.Run("ErrUnknownProject", func(t *testing.T) {
		code, _, errOut := run("--name", "bot", "--role", "agent", "--project", "nope")
		if code != ExitNotFound {
			t.Fatalf("exit %d, want %d", code, ExitNotFound)
		}
		// It says where it looked, what is there, and that a server with
		// another --data-dir or --database-url keeps its projects
		// elsewhere: the usual cause when the server has the project.
		for _, want := range []string{`project "nope" not found in the database of --database-url`, "projects there:", "--data-dir or --database-url", "workgraph tokens create NAME --project nope"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("the message lacks %q:\n%s", want, errOut)
			}
		}
	})
	t.Run("ErrNoProjectSaysAnAgent", func(t *testing.T) {
		if code, _, errOut := run("--name", "bot", "--role", "agent"); code != ExitUsage || !strings.Contains(errOut, "an agent token needs --project") {
			t.Fatalf("exit %d (%s), want %d and an agent token needs --project", code, errOut, ExitUsage)
		}
	})
	t.Run("ErrDuplicateName", func(t *testing.T) {
		// A duplicate name in a project exits 6, as `tokens create` over
		// the API does.
		pool, err := db.Open(context.Background(), url, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if err := db.Migrate(context.Background(), pool, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := graph.NewService(pool, nil).CreateProject(context.Background(), "tokens-twice"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := run("--name", "twice", "--role", "agent", "--project", "tokens-twice"); code != 0 {
			t.Fatalf("first: exit %d: %s", code, errOut)
		}
		if code, _, errOut := run("--name", "twice", "--role", "agent", "--project", "tokens-twice"); code != ExitConflict || !strings.Contains(errOut, "already exists") {
			t.Fatalf("second: exit %d (%s), want %d", code, errOut, ExitConflict)
		}
	})
	t.Run("ErrNoProject", func(t *testing.T) {
		if code, _, _ := run("--name", "bot", "--role", "agent"); code != ExitUsage {
			t.Fatalf("exit %d, want %d", code, ExitUsage)
		}
	})
}

func openAuth(t *testing.T, url string) *auth.Service {
	t.Helper()
	pool, err := db.Open(context.Background(), url, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return auth.NewService(pool, nil)
}
