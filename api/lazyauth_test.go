package api_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

// TestLeaseStepsRefuseARevokedToken: the steps of a lease check a token
// they verified before in their first round trip instead of looking it up
// (authenticateLazy). A token used on replica B and revoked through
// replica A is refused by B's very next claim, heartbeat and complete, as
// 401 naming the revocation, and none of them changes anything; so is a
// step that fails its input checks before reaching the database. Two
// servers on one database.
func TestLeaseStepsRefuseARevokedToken(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	a := setup(t, func(c *server.Config) { c.DatabaseURL = url })
	b := setup(t, func(c *server.Config) { c.DatabaseURL = url })
	a.mustProject("alpha")
	for i := range 3 {
		a.do("POST", "/v1/projects/alpha/items", adminToken, map[string]any{"title": "work " + strconv.Itoa(i)}).ok(t, 201, nil)
	}
	refused := func(t *testing.T, r resp) {
		t.Helper()
		p := r.problem(t, 401, "unauthenticated")
		if d, _ := p["detail"].(string); !strings.Contains(d, "revoked") {
			t.Errorf("detail %q does not say the token was revoked", d)
		}
	}
	var claim struct {
		Lease struct {
			ID        string `json:"id"`
			Epoch     int64  `json:"epoch"`
			ExpiresAt string `json:"expires_at"`
		} `json:"lease"`
	}
	claimBody := map[string]any{"worker": "w"}

	tok := a.mustToken("alpha", "worker-1", "agent")
	// B verifies the token (its first request looks it up), then grants.
	b.do("POST", "/v1/projects/alpha/claims", tok.Token, claimBody).ok(t, 201, &claim)
	leasePath := "/v1/leases/" + claim.Lease.ID
	b.do("POST", leasePath+"/heartbeat", tok.Token, map[string]any{"epoch": claim.Lease.Epoch}).ok(t, 200, nil)
	a.do("DELETE", "/v1/projects/alpha/tokens/"+tok.ID, adminToken, nil).ok(t, 204, nil)
	expires := func() string {
		var s string
		if err := a.pool.QueryRow(t.Context(), "SELECT expires_at::text FROM leases WHERE id = $1", claim.Lease.ID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := expires()
	leases := a.count("SELECT count(*) FROM leases")

	t.Run("ErrHeartbeat", func(t *testing.T) {
		refused(t, b.do("POST", leasePath+"/heartbeat", tok.Token, map[string]any{"epoch": claim.Lease.Epoch}))
		if after := expires(); after != before {
			t.Errorf("the refused heartbeat renewed the lease: expires_at %s -> %s", before, after)
		}
	})
	t.Run("ErrComplete", func(t *testing.T) {
		refused(t, b.do("POST", leasePath+"/complete", tok.Token, map[string]any{"epoch": claim.Lease.Epoch, "result": map[string]any{"ok": true}}))
		if n := a.count("SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL", claim.Lease.ID); n != 1 {
			t.Errorf("the refused completion ended the lease")
		}
	})
	t.Run("ErrClaim", func(t *testing.T) {
		refused(t, b.do("POST", "/v1/projects/alpha/claims", tok.Token, claimBody))
		refused(t, b.do("POST", "/v1/projects/alpha/claims", tok.Token, claimBody, withHeader("Idempotency-Key", "k-1")))
		if n := a.count("SELECT count(*) FROM leases"); n != leases {
			t.Errorf("the refused claims granted %d leases", n-leases)
		}
		if n := a.count("SELECT count(*) FROM idempotency_keys WHERE key = 'k-1'"); n != 0 {
			t.Errorf("the refused claim kept an idempotency record")
		}
	})
	t.Run("ErrBeforeAnyStatement", func(t *testing.T) {
		// A bad epoch is refused before the database: the token's check
		// runs alone, and its refusal is the answer.
		refused(t, b.do("POST", leasePath+"/heartbeat", tok.Token, map[string]any{"epoch": 0}))
	})
}
