package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
)

// TestThrottleSparesKnownTokens: requests without valid credentials from
// the address a worker shares (a NAT, a proxy that is not trusted) empty
// the address's bucket, and yet the worker's heartbeat, completion and
// other calls, and a person's sign-in, with tokens this replica verified
// before, still pass: anonymous traffic cannot starve them. Guesses are
// still refused before any token is read, and so is a valid token this
// replica never verified (without a lookup it is a guess). Every request
// of a throttled address used to be refused, heartbeats included, until
// the bucket refilled.
func TestThrottleSparesKnownTokens(t *testing.T) {
	t.Parallel()
	const burst = 3
	srv := start(t, func(c *server.Config) { c.UnauthenticatedRate, c.UnauthenticatedBurst = 0.001, burst })
	ctx := context.Background()
	as := func(token string) *client.Client {
		c, err := client.New(srv.URL(), token, client.WithRetries(1)) // a 429 is an answer here, not retried
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin := as(adminToken)
	if _, err := admin.CreateProject(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, tc := range []struct{ name, role string }{{"worker", "agent"}, {"person", "human"}, {"unseen", "agent"}} {
		tk, err := admin.CreateToken(ctx, "acme", client.CreateTokenRequest{Name: tc.name, Role: tc.role})
		if err != nil {
			t.Fatal(err)
		}
		tokens[tc.name] = tk.Secret
	}
	worker := as(tokens["worker"])
	if _, err := worker.CreateItem(ctx, "acme", client.CreateItemRequest{Title: "a"}); err != nil {
		t.Fatal(err)
	}
	c, err := worker.Claim(ctx, "acme", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as(tokens["person"]).ListProjects(ctx); err != nil {
		t.Fatal(err)
	}

	guess := func(i int) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer wg_guess_"+strconv.Itoa(i))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for i := range burst {
		if st := guess(i); st != http.StatusUnauthorized {
			t.Fatalf("guess %d: status %d, want 401", i, st)
		}
	}
	if st := guess(burst); st != http.StatusTooManyRequests {
		t.Fatalf("a guess from the throttled address: status %d, want 429", st)
	}

	t.Run("OK", func(t *testing.T) {
		if _, err := worker.Heartbeat(ctx, c.Lease.ID, client.HeartbeatRequest{Epoch: c.Lease.Epoch}); err != nil {
			t.Fatalf("the worker's heartbeat from the throttled address: %v", err)
		}
		if _, err := worker.CreateItem(ctx, "acme", client.CreateItemRequest{Title: "b"}); err != nil {
			t.Fatalf("the worker's create from the throttled address: %v", err)
		}
		if _, err := worker.Complete(ctx, c.Lease.ID, client.CompleteRequest{Epoch: c.Lease.Epoch, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatalf("the worker's completion from the throttled address: %v", err)
		}
		if st := newBrowser(t, srv).signIn(tokens["person"]); st != http.StatusSeeOther {
			t.Fatalf("a person's sign-in from the throttled address: status %d, want 303", st)
		}
		// The bootstrap token (any secret, not wg_<id>_) was verified
		// above too: the operator's admin token is not locked out either.
		if _, err := admin.ListProjects(ctx); err != nil {
			t.Fatalf("the bootstrap admin token from the throttled address: %v", err)
		}
		if st := newBrowser(t, srv).signIn(adminToken); st != http.StatusSeeOther {
			t.Fatalf("a sign-in with the bootstrap token from the throttled address: status %d, want 303", st)
		}
	})
	t.Run("ErrUnseenTokenThrottled", func(t *testing.T) {
		_, err := as(tokens["unseen"]).ListProjects(ctx)
		var problem *client.Error
		if !errors.As(err, &problem) || problem.Code != client.CodeRateLimited {
			t.Fatalf("a token this replica never verified, from the throttled address: %v, want rate_limited", err)
		}
		if st := guess(burst + 1); st != http.StatusTooManyRequests {
			t.Fatalf("a guess after the known tokens passed: status %d, want 429", st)
		}
	})
}
