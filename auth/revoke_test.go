package auth

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestRevocationImmediateAcrossReplicas: two services on one database, each
// with its own pool (two replicas). A token verified on B just before A
// revokes it is refused by B's very next request, every time: the docs
// promise that a revocation takes effect at once, on every replica.
func TestRevocationImmediateAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	openPool := func() *pgxpool.Pool {
		p, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	poolA, poolB := openPool(), openPool()
	var project uuid.UUID
	if err := poolA.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	a, b := NewService(poolA, nil), NewService(poolB, nil)
	const tries = 50
	for i := range tries {
		tok, bearer, err := a.Create(ctx, &project, fmt.Sprintf("w-%d", i), RoleAgent) // names are unique per project
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // B serves the token a few times first
			if _, err := b.Authenticate(ctx, bearer); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Revoke(ctx, project, tok.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("try %d: the revoking replica still accepts the token: %v", i, err)
		}
		if _, err := b.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("try %d of %d: another replica accepted the token right after its revocation: %v", i+1, tries, err)
		}
	}
}

// TestRevokedInDatabase: a revocation written straight into the database,
// by no service at all, takes effect at the next request.
func TestRevokedInDatabase(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	svc := NewService(pool, nil)
	tok, bearer, err := svc.Create(ctx, &project, "w", RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, bearer); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE tokens SET revoked_at = now() WHERE id = $1", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
		t.Fatalf("a token revoked in the database is still accepted: %v", err)
	}
}
