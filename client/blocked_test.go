package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestCompleteBlocked: a completion of an item that gained a dependency on
// an open item while it was leased is client.ErrBlocked, naming the
// dependency in the problem's "dependencies", and it is not retried: the
// lease is still held, so the agent can release it.
func TestCompleteBlocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, agent, seen := agentOn(t, dbtest.URL(t))
	admin, _ := client.New(srv.URL(), adminToken)
	x, err := admin.CreateItem(ctx, "p", client.CreateItemRequest{Title: "x", Labels: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60, Labels: []string{"x"}})
	if err != nil || cl.Item.ID != x.ID {
		t.Fatalf("claim: %v", err)
	}
	pre, err := admin.CreateItem(ctx, "p", client.CreateItemRequest{Title: "prerequisite"})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.AddDependency(ctx, "p", x.ID, pre.ID); err != nil {
		t.Fatal(err)
	}
	before := seen.count(0)
	_, err = agent.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: json.RawMessage(`1`)})
	if !errors.Is(err, client.ErrBlocked) {
		t.Fatalf("Complete: %v, want ErrBlocked", err)
	}
	if n := seen.count(0) - before; n != 1 {
		t.Errorf("the blocked completion was sent %d times, want once (not retried)", n)
	}
	var ae *client.Error
	var deps []string
	if !errors.As(err, &ae) || !ae.Extension("dependencies", &deps) || len(deps) != 1 || deps[0] != pre.ID {
		t.Errorf("blocked problem names %v, want [%s]", deps, pre.ID)
	}
	if _, err := agent.Release(ctx, cl.Lease.ID, client.ReleaseRequest{Epoch: cl.Lease.Epoch}); err != nil {
		t.Errorf("release after the refusal: %v", err)
	}
}
