package web

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// TestTimelineGeometry: a lease of milliseconds in an hour-long history keeps
// a visible bar, and the "N refused" label sits just right of its marks,
// not at the plot's edge.
func TestTimelineGeometry(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	released, completed := lease.OutcomeReleased, lease.OutcomeCompleted
	short := lease.Lease{ID: uuid.New(), Epoch: 1, Worker: "w", AcquiredAt: t0, EndedAt: at(5 * time.Millisecond), Outcome: &released, StaleCalls: 1}
	long := lease.Lease{ID: uuid.New(), Epoch: 2, Worker: "w", AcquiredAt: *at(time.Minute), EndedAt: at(time.Hour), Outcome: &completed}
	obs := map[uuid.UUID][]lease.Observation{short.ID: {{LeaseID: short.ID, Kind: "stale", Operation: "heartbeat", ReceivedAt: *at(2 * time.Minute)}}}

	tl := buildTimeline([]lease.Lease{short, long}, obs, *at(2 * time.Hour))
	lane := tl.Lanes[0]
	if lane.W < tlMinBarW {
		t.Errorf("the 5 ms bar is %.1f wide, want at least %d", lane.W, tlMinBarW)
	}
	if len(lane.Marks) != 1 {
		t.Fatalf("marks = %+v", lane.Marks)
	}
	mark := lane.Marks[0].X
	if lane.StaleX <= mark || lane.StaleX > mark+20 {
		t.Errorf("the refused label starts at %.1f, want just right of its mark at %.1f (the plot ends at %.1f)", lane.StaleX, mark, tl.PlotX1)
	}
	if tl.Lanes[1].StaleX+tlStaleLabelW > float64(tl.Width) {
		t.Errorf("a label would leave the picture")
	}

	// A mark at the very end of the plot keeps its label inside the picture.
	obs[short.ID][0].ReceivedAt = *at(2 * time.Hour)
	tl = buildTimeline([]lease.Lease{short, long}, obs, *at(2 * time.Hour))
	if x := tl.Lanes[0].StaleX; x+tlStaleLabelW > float64(tl.Width) || x < tl.Lanes[0].Marks[0].X {
		t.Errorf("label at %.1f for a mark at %.1f in a picture %d wide", x, tl.Lanes[0].Marks[0].X, tl.Width)
	}
}

// TestTimelineWorkerLabel: a worker's name in a lane is cut to fit the
// label column (a name of up to 200 characters ran under the bars and the
// expiry label); the whole name stays in the lane's tooltip.
func TestTimelineWorkerLabel(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	long := strings.Repeat("verylongworkername-", 8)
	ls := []lease.Lease{
		{ID: uuid.New(), Epoch: 1, Worker: long, AcquiredAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: uuid.New(), Epoch: 2, Worker: "claude-1", AcquiredAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: uuid.New(), Epoch: 3, Worker: "ワーカー名前が長い日本語のワーカー", AcquiredAt: t0, ExpiresAt: t0.Add(time.Hour)},
	}
	tl := buildTimeline(ls, nil, t0.Add(time.Minute))
	for i, want := range []string{"verylongworkern…", "claude-1", "ワーカー名前が…"} {
		lane := tl.Lanes[i]
		if lane.WorkerLabel != want {
			t.Errorf("lane %d: label %q, want %q", i, lane.WorkerLabel, want)
		}
		if !strings.Contains(lane.Title, ls[i].Worker) {
			t.Errorf("lane %d: the tooltip %q lacks the whole name", i, lane.Title)
		}
	}
}

// TestTimelineYoungHistoryHasTicks: a history shorter than a second (a
// lease granted just now) still gets a labelled axis: the window is
// widened to a second, not only the step chosen for it.
func TestTimelineYoungHistoryHasTicks(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	ls := []lease.Lease{{ID: uuid.New(), Epoch: 1, Worker: "w", AcquiredAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}}
	tl := buildTimeline(ls, nil, t0.Add(300*time.Millisecond))
	if len(tl.Ticks) == 0 {
		t.Fatalf("no tick on the axis of a 300 ms history")
	}
	for _, tk := range tl.Ticks {
		if tk.X < tl.PlotX0 || tk.X > tl.PlotX1 {
			t.Errorf("tick %q at %.1f, outside the plot %.1f..%.1f", tk.Label, tk.X, tl.PlotX0, tl.PlotX1)
		}
	}
	if lane := tl.Lanes[0]; lane.W > (tl.PlotX1-tl.PlotX0)/2 {
		t.Errorf("a 300 ms lease fills %.0f of the %.0f-wide plot", lane.W, tl.PlotX1-tl.PlotX0)
	}
}
