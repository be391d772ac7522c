package web

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// chain is n items, each waiting for the one before.
func chain(n int) ([]graphNode, []graphEdge) {
	nodes := make([]graphNode, n)
	var edges []graphEdge
	for i := range nodes {
		nodes[i] = graphNode{ID: uuid.New(), Title: fmt.Sprintf("item %d", i), State: "blocked"}
		if i > 0 {
			edges = append(edges, graphEdge{From: nodes[i-1].ID, To: nodes[i].ID})
		}
	}
	return nodes, edges
}

// layered is k levels of w items, each waiting for every item of the level
// before: no arrow is implied by others, so nothing can be left out.
func layered(k, w int) ([]graphNode, []graphEdge) {
	var nodes []graphNode
	var edges []graphEdge
	for l := range k {
		for i := range w {
			n := graphNode{ID: uuid.New(), Title: fmt.Sprintf("level %d item %d", l, i), State: "blocked"}
			if l > 0 {
				for _, p := range nodes[(l-1)*w : l*w] {
					edges = append(edges, graphEdge{From: p.ID, To: n.ID})
				}
			}
			nodes = append(nodes, n)
		}
	}
	return nodes, edges
}

func TestDrawCancelled(t *testing.T) {
	t.Parallel()
	d := NewDrawings(DrawLimits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.SetHook(func(context.Context, uuid.UUID) error { cancel(); return nil })
	nodes, edges := chain(30)
	_, err := d.draw(ctx, uuid.New(), nodes, edges, false)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("layout cancelled while it ran: err = %v, want context.Canceled", err)
	}
}

func TestDrawCached(t *testing.T) {
	t.Parallel()
	d := NewDrawings(DrawLimits{})
	project := uuid.New()
	nodes, edges := chain(5)
	for range 2 {
		if _, err := d.draw(context.Background(), project, nodes, edges, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.Layouts(); n != 1 {
		t.Fatalf("the same graph twice: %d layouts, want 1", n)
	}
	nodes[2].State = "ready"
	if _, err := d.draw(context.Background(), project, nodes, edges, false); err != nil {
		t.Fatal(err)
	}
	if n := d.Layouts(); n != 2 {
		t.Fatalf("after a change: %d layouts, want 2", n)
	}
}

func TestDrawOverBudget(t *testing.T) {
	t.Parallel()
	d := NewDrawings(DrawLimits{})
	nodes, edges := layered(3, 30) // 1,800 arrows, none implied
	got, err := d.draw(context.Background(), uuid.New(), nodes, edges, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Layouts(); n != 0 {
		t.Errorf("over-budget graph was laid out (%d layouts)", n)
	}
	if got.SVG != "" || len(got.Summary) != 3 {
		t.Fatalf("want a summary of 3 levels and no picture, got %d levels, svg %d bytes", len(got.Summary), len(got.SVG))
	}
	for i, l := range got.Summary {
		if len(l.Items) != 30 {
			t.Errorf("level %d has %d items, want 30", i, len(l.Items))
		}
	}
}

// One project holds at most half of the replica's layout slots: its second
// picture waits for its first while another project's is drawn.
func TestDrawProjectCannotTakeEverySlot(t *testing.T) {
	t.Parallel()
	d := NewDrawings(DrawLimits{Slots: 2})
	busy, other := uuid.New(), uuid.New()
	var entered atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	d.SetHook(func(ctx context.Context, project uuid.UUID) error {
		if project == busy {
			if entered.Add(1) == 1 {
				close(held)
			}
			<-release
		}
		return nil
	})
	done := make(chan error, 2)
	draw := func(project uuid.UUID) {
		nodes, edges := chain(3) // a different graph each time: no cache hit
		_, err := d.draw(context.Background(), project, nodes, edges, false)
		done <- err
	}
	go draw(busy)
	<-held
	go draw(busy)
	for { // until the second picture waits for the project's slot
		d.mu.Lock()
		users := d.projects[busy].users
		d.mu.Unlock()
		if users == 2 {
			break
		}
		runtime.Gosched()
	}
	nodes, edges := chain(3)
	if _, err := d.draw(context.Background(), other, nodes, edges, false); err != nil {
		t.Fatal(err)
	}
	if n := entered.Load(); n != 1 {
		t.Errorf("the busy project ran %d layouts at once, want 1", n)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A layout that runs out of time gives a summary, and the next one is laid
// out afresh.
func TestDrawTimeout(t *testing.T) {
	t.Parallel()
	d := NewDrawings(DrawLimits{Timeout: time.Millisecond})
	var calls atomic.Int32
	d.SetHook(func(ctx context.Context, _ uuid.UUID) error {
		if calls.Add(1) == 1 {
			<-ctx.Done() // the layout's own deadline, not the caller's
		}
		return nil
	})
	nodes, edges := chain(4)
	got, err := d.draw(context.Background(), uuid.New(), nodes, edges, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.SVG != "" || len(got.Summary) != 4 || !strings.Contains(got.Reason, "took longer than") {
		t.Fatalf("timed-out layout: svg %d bytes, %d levels, reason %q", len(got.SVG), len(got.Summary), got.Reason)
	}
	d.lim.Timeout = time.Minute
	if got, err = d.draw(context.Background(), uuid.New(), nodes, edges, false); err != nil || got.SVG == "" {
		t.Fatalf("the next layout: svg %d bytes, err %v", len(got.SVG), err)
	}
}
