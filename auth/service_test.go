package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func setup(t *testing.T) (*auth.Service, uuid.UUID) {
	t.Helper()
	pool := dbtest.New(t)
	var project uuid.UUID
	if err := pool.QueryRow(context.Background(), "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	return auth.NewService(pool, nil), project
}

func TestCreateAuthenticate(t *testing.T) {
	t.Parallel()
	svc, project := setup(t)
	ctx := context.Background()

	tok, bearer, err := svc.Create(ctx, &project, "worker-1", auth.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bearer, "wg_") {
		t.Fatalf("bearer %q lacks the wg_ prefix", bearer)
	}

	t.Run("OK", func(t *testing.T) {
		p, err := svc.Authenticate(ctx, bearer)
		if err != nil {
			t.Fatal(err)
		}
		if p.TokenID != tok.ID || p.Role != auth.RoleAgent || p.ProjectID == nil || *p.ProjectID != project {
			t.Fatalf("principal = %+v", p)
		}
		if p.String() != "token:worker-1" {
			t.Fatalf("String() = %q", p.String())
		}
	})
	t.Run("ErrWrongSecret", func(t *testing.T) {
		wrong := bearer[:len(bearer)-1] + "0"
		if wrong == bearer {
			wrong = bearer[:len(bearer)-1] + "1"
		}
		if _, err := svc.Authenticate(ctx, wrong); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("err = %v, want unauthenticated", err)
		}
	})
	t.Run("ErrGarbage", func(t *testing.T) {
		for _, b := range []string{"", "x", "wg_", "wg_zz_zz", "wg_" + strings.Repeat("0", 32) + "_abc"} {
			if _, err := svc.Authenticate(ctx, b); !errors.Is(err, wgerr.Unauthenticated) {
				t.Fatalf("%q: err = %v, want unauthenticated", b, err)
			}
		}
	})
	t.Run("ErrRevoked", func(t *testing.T) {
		_, b2, err := svc.Create(ctx, &project, "other", auth.RoleHuman)
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, b2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Revoke(ctx, project, p.TokenID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authenticate(ctx, b2); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("err = %v, want unauthenticated after revoke", err)
		}
		// The first token is unaffected.
		if _, err := svc.Authenticate(ctx, bearer); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrRevokeOtherProject", func(t *testing.T) {
		if _, err := svc.Revoke(ctx, uuid.New(), tok.ID); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
}

func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	svc, project := setup(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		project *uuid.UUID
		tname   string
		role    auth.Role
		field   string
		code    wgerr.Code
	}{
		{"ErrNameEmpty", &project, " ", auth.RoleAgent, "name", wgerr.CodeInvalid},
		// The name is the principal history, events and logs show
		// ("token:<name>"): no line breaks, escapes or other controls.
		{"ErrNameNewline", &project, "agent-1\nlevel=ERROR msg=forged", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrNameEscape", &project, "agent-1\x1b[2J", auth.RoleAgent, "name", wgerr.CodeInvalid},
		// Unique names keep principals apart in history: "agent-1 " or
		// "agent-1" with a no-break space would read as "agent-1".
		{"ErrNameTrailingSpace", &project, "agent-1 ", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrNameLeadingSpace", &project, " agent-1", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrNameTrailingNoBreakSpace", &project, "agent-1\u00a0", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrNameInnerNoBreakSpace", &project, "agent\u00a01", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrNameIdeographicSpace", &project, "agent\u30001", auth.RoleAgent, "name", wgerr.CodeInvalid},
		{"ErrRole", &project, "a", "root", "role", wgerr.CodeInvalid},
		{"ErrNoProject", nil, "a", auth.RoleHuman, "project", wgerr.CodeInvalid},
		{"ErrUnknownProject", ptr(uuid.New()), "a", auth.RoleHuman, "", wgerr.CodeNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := svc.Create(ctx, c.project, c.tname, c.role)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != c.code || we.Field != c.field {
				t.Fatalf("err = %#v, want %s on %q", err, c.code, c.field)
			}
		})
	}
	toks, err := svc.List(ctx, project)
	if err != nil || len(toks) != 0 {
		t.Fatalf("tokens stored after refusals: %v %v", toks, err)
	}
}

// TestCreateNameTaken: a token name is unique in its project, revoked
// tokens included, and free in another project.
func TestCreateNameTaken(t *testing.T) {
	t.Parallel()
	svc, project := setup(t)
	ctx := context.Background()
	tok, _, err := svc.Create(ctx, &project, "agent-1", auth.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string) {
		t.Helper()
		_, _, err := svc.Create(ctx, &project, "agent-1", auth.RoleHuman)
		var we *wgerr.Error
		if !errors.As(err, &we) || we.Code != wgerr.CodeAlreadyExists || we.Field != "name" {
			t.Fatalf("%s: err = %#v, want already_exists on name", name, err)
		}
	}
	check("ErrNameTaken")
	if _, err := svc.Revoke(ctx, project, tok.ID); err != nil {
		t.Fatal(err)
	}
	check("ErrNameTakenByRevoked")
	toks, err := svc.List(ctx, project)
	if err != nil || len(toks) != 1 {
		t.Fatalf("%d tokens stored, want 1 (%v)", len(toks), err)
	}
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx := context.Background()
	const bearer = "my-operator-chosen-secret"
	var wg sync.WaitGroup
	created := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, revoked, err := svc.EnsureBootstrap(ctx, bearer)
			if err != nil || revoked {
				t.Errorf("EnsureBootstrap: %v revoked=%v", err, revoked)
			}
			created <- c
		}()
	}
	wg.Wait()
	close(created)
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("created %d bootstrap tokens, want 1", n)
	}
	p, err := svc.Authenticate(ctx, bearer)
	if err != nil {
		t.Fatal(err)
	}
	if p.Role != auth.RoleAdmin || p.ProjectID != nil {
		t.Fatalf("principal = %+v", p)
	}
	// A first start after a bootstrap creates nothing.
	b, err := svc.FirstStart(ctx)
	if err != nil || b != "" {
		t.Fatalf("FirstStart = %q, %v; want nothing", b, err)
	}
}

func TestFirstStart(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	svc := auth.NewService(pool, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	bearers := make(chan string, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := svc.FirstStart(ctx)
			if err != nil {
				t.Error(err)
			}
			bearers <- b
		}()
	}
	wg.Wait()
	close(bearers)
	var got []string
	for b := range bearers {
		if b != "" {
			got = append(got, b)
		}
	}
	if len(got) != 1 {
		t.Fatalf("first start minted %d tokens, want 1", len(got))
	}
	p, err := svc.Authenticate(ctx, got[0])
	if err != nil || p.Role != auth.RoleAdmin {
		t.Fatalf("principal %+v, %v", p, err)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, "SELECT secret_hash FROM tokens WHERE id = $1", p.TokenID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), got[0]) {
		t.Fatal("the bearer is stored in clear")
	}
	var projects int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = 'default'").Scan(&projects); err != nil || projects != 1 {
		t.Fatalf("default projects = %d, %v", projects, err)
	}
}

func ptr[T any](v T) *T { return &v }
