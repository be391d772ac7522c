package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestRemembers: a token is remembered (the throttle lets it through)
// once Authenticate accepted it, with its own secret only; a guess that
// names its id with another secret does not make the service forget it;
// a revocation, on this replica or on another one (seen by this one's
// next Authenticate), or the token's row deleted, does. Two services on one database are two
// replicas. A remembered token revoked elsewhere used to stay remembered,
// so a throttled address could keep sending it past the throttle, each
// time costing a lookup.
func TestRemembers(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	a, b := NewService(pool, nil), NewService(pool, nil)
	mustToken := func(name string) (uuid.UUID, string) {
		t.Helper()
		tok, bearer, err := a.Create(ctx, &project, name, RoleAgent)
		if err != nil {
			t.Fatal(err)
		}
		if a.Remembers(bearer) {
			t.Fatal("a token remembered before it was ever verified")
		}
		if _, err := a.Authenticate(ctx, bearer); err != nil {
			t.Fatal(err)
		}
		if !a.Remembers(bearer) {
			t.Fatal("a verified token is not remembered")
		}
		return tok.ID, bearer
	}

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		_, bearer := mustToken("ok")
		forged := bearer[:len(bearer)-4] + "0000"
		if forged == bearer {
			forged = bearer[:len(bearer)-4] + "1111"
		}
		if a.Remembers(forged) || a.Remembers("") || a.Remembers("wg_guess") {
			t.Fatal("a bearer string that is not the token's is remembered")
		}
		if _, err := a.Authenticate(ctx, forged); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("a forged secret for a real id: %v, want unauthenticated", err)
		}
		if !a.Remembers(bearer) {
			t.Fatal("a guess naming the token's id made the service forget it")
		}
	})
	t.Run("RevokedHere", func(t *testing.T) {
		t.Parallel()
		id, bearer := mustToken("here")
		if _, err := a.Revoke(ctx, project, id); err != nil {
			t.Fatal(err)
		}
		if a.Remembers(bearer) {
			t.Fatal("a token revoked on this replica is still remembered")
		}
	})
	t.Run("RevokedElsewhere", func(t *testing.T) {
		t.Parallel()
		id, bearer := mustToken("elsewhere")
		if _, err := b.Revoke(ctx, project, id); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("a token revoked on another replica: %v, want unauthenticated", err)
		}
		if a.Remembers(bearer) {
			t.Fatal("a token seen revoked is still remembered")
		}
	})
	t.Run("BootstrapToken", func(t *testing.T) {
		// A bootstrap token's bearer string is any secret, not wg_<id>_:
		// it is found by its hash. It was never remembered, so guesses
		// from an address locked out the operator's own admin token (its
		// CI, its container) until the bucket refilled.
		t.Parallel()
		const bearer = "ci-bootstrap-secret-for-remembers"
		svc := NewService(pool, nil)
		if _, _, err := svc.EnsureBootstrap(ctx, bearer); err != nil {
			t.Fatal(err)
		}
		if svc.Remembers(bearer) {
			t.Fatal("a bootstrap token remembered before it was ever verified")
		}
		p, err := svc.Authenticate(ctx, bearer)
		if err != nil {
			t.Fatal(err)
		}
		if !svc.Remembers(bearer) {
			t.Fatal("a verified bootstrap token is not remembered")
		}
		if svc.Remembers(bearer+"x") || svc.Remembers("ci-bootstrap-secret-for-rememberz") {
			t.Fatal("another secret is remembered")
		}
		if _, _, ok := svc.Lazy(ctx, bearer); !ok {
			t.Fatal("Lazy does not vouch for a verified bootstrap token")
		}
		if _, err := pool.Exec(ctx, "UPDATE tokens SET revoked_at = now() WHERE id = $1", p.TokenID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("a revoked bootstrap token: %v, want unauthenticated", err)
		}
		if svc.Remembers(bearer) {
			t.Fatal("a bootstrap token seen revoked is still remembered")
		}
	})
	t.Run("Deleted", func(t *testing.T) {
		t.Parallel()
		id, bearer := mustToken("deleted")
		if _, err := pool.Exec(ctx, "DELETE FROM tokens WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
			t.Fatalf("a deleted token: %v, want unauthenticated", err)
		}
		if a.Remembers(bearer) {
			t.Fatal("a token seen deleted is still remembered")
		}
	})
}
