package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestReadyNotifications: the workgraph_ready notification goes out when a
// transaction leaves an item ready, and only then. A completion, a
// blocking question and a failure handed to a person leave the item done
// or held; they must not wake the claimers waiting on the project (the last
// frees the item before it opens the request, so inside its transaction the
// item passes through a ready row). A release, and a completion that
// unblocks a dependent, must.
//
// Notifications arrive in commit order, so after each step a ready item is
// created in a second project as a marker: what arrives before the marker's
// notification is what the step sent.
func TestReadyNotifications(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxFailures: 1}) // LISTENs
	other, err := f.graph.CreateProject(f.ctx, "marker")
	if err != nil {
		t.Fatal(err)
	}
	listener, err := pgx.ConnectConfig(f.ctx, f.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(f.ctx, "LISTEN workgraph_ready"); err != nil {
		t.Fatal(err)
	}
	// sent returns whether the steps since the last call notified f's
	// project.
	sent := func(t *testing.T) bool {
		t.Helper()
		f.in(other.ID).item(t, graph.NewItem{})
		ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		defer cancel()
		notified := false
		for {
			n, err := listener.WaitForNotification(ctx)
			if err != nil {
				t.Fatalf("waiting for the marker's notification: %v", err)
			}
			// The payload begins with the project's id (then the item).
			project, _, _ := strings.Cut(n.Payload, " ")
			if project == other.ID.String() {
				return notified
			}
			notified = notified || project == f.project.String()
		}
	}
	claimed := func(t *testing.T) lease.Lease {
		_, l := f.claimNew(t, "w")
		sent(t) // the new item's own notification
		return l
	}

	t.Run("CompleteNotifiesNothing", func(t *testing.T) {
		l := claimed(t)
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); err != nil {
			t.Fatal(err)
		}
		if sent(t) {
			t.Error("a completion that leaves nothing ready notified the project")
		}
	})
	t.Run("BlockingQuestionNotifiesNothing", func(t *testing.T) {
		l := claimed(t)
		f.ask(t, l, "which way?", true)
		if sent(t) {
			t.Error("a blocking question notified the project")
		}
	})
	t.Run("FailureForAPersonNotifiesNothing", func(t *testing.T) {
		l := claimed(t)
		res, err := f.leases.Fail(f.ctx, f.project, fence(l), lease.Failure{Message: "broken"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Attention == nil {
			t.Fatal("the failure opened no attention request")
		}
		if sent(t) {
			t.Error("a failure handed to a person notified the project")
		}
	})
	t.Run("ReleaseNotifies", func(t *testing.T) {
		l := claimed(t)
		if _, err := f.leases.Release(f.ctx, f.project, fence(l), "done for today"); err != nil {
			t.Fatal(err)
		}
		if !sent(t) {
			t.Error("a release made the item ready again without a notification")
		}
	})
	t.Run("UnblockingCompletionNotifies", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		f.item(t, graph.NewItem{DependsOn: []uuid.UUID{it.ID}})
		sent(t)
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); err != nil {
			t.Fatal(err)
		}
		if !sent(t) {
			t.Error("a completion that made a dependent ready sent no notification")
		}
	})
}
