package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// Timeline is the geometry of an item's lease timeline: one lane per lease
// (oldest at the top), a bar from acquisition to end coloured by outcome, a
// dashed tail to the expiry of a lease still running, and a red mark at
// every refused late or stale report. The template draws it as SVG.
type Timeline struct {
	Width, Height  int
	PlotX0, PlotX1 float64
	AxisY          float64
	Lanes          []TimelineLane
	Ticks          []TimelineTick
}

// TimelineLane is one lease.
type TimelineLane struct {
	Y      float64 // top of the lane
	Epoch  int64
	Worker string
	// WorkerLabel is Worker cut to fit the label column (workerLabel).
	WorkerLabel string
	Outcome     string // CSS suffix: an outcome or "active"
	X, W        float64
	Title       string // tooltip
	TailX       float64
	TailW       float64 // >0: dashed tail to the expiry of an active lease
	TailLabel   string  // the expiry, when it lies beyond the plot
	Marks       []TimelineMark
	StaleCalls  int
	// StaleX is where the "N refused" label starts: just right of the
	// lane's last refused mark (or of its bar), not at the plot's edge.
	StaleX  float64
	LeaseID uuid.UUID
}

// TimelineMark is a refused report.
type TimelineMark struct {
	X     float64
	Title string
}

// TimelineTick is a labelled time on the axis.
type TimelineTick struct {
	X     float64
	Label string
}

const (
	tlWidth  = 960
	tlLabelW = 190
	tlRightW = 100
	tlLaneH  = 30
	tlTop    = 6
	tlAxisH  = 26
	// tlMinBarW is the narrowest bar drawn: a lease of a few
	// milliseconds in a history of hours stays visible and hoverable.
	tlMinBarW = 8
	// tlStaleGap is the space between a lane's last mark and its
	// "N refused" label; tlStaleLabelW the room the label needs.
	tlStaleGap    = 7
	tlStaleLabelW = 80
)

// buildTimeline lays out leases (oldest first) against now.
func buildTimeline(leases []lease.Lease, obs map[uuid.UUID][]lease.Observation, now time.Time) *Timeline {
	if len(leases) == 0 {
		return nil
	}
	start, end := leases[0].AcquiredAt, leases[0].AcquiredAt
	extend := func(t time.Time) {
		if t.Before(start) {
			start = t
		}
		if t.After(end) {
			end = t
		}
	}
	for _, l := range leases {
		extend(l.AcquiredAt)
		if l.EndedAt != nil {
			extend(*l.EndedAt)
		} else {
			// Not to the expiry: a long TTL would squash the history.
			extend(now)
		}
		for _, o := range obs[l.ID] {
			extend(o.ReceivedAt)
		}
	}
	// At least a second of history, so that the axis has a tick to label
	// (a lease granted just now): the window itself is widened, not only
	// the span its step is chosen for.
	if end.Sub(start) < time.Second {
		end = start.Add(time.Second)
	}
	span := end.Sub(start)
	// A little air on both sides.
	start = start.Add(-span / 40)
	end = end.Add(span / 40)
	span = end.Sub(start)

	tl := &Timeline{Width: tlWidth, PlotX0: tlLabelW, PlotX1: tlWidth - tlRightW}
	x := func(t time.Time) float64 {
		return tl.PlotX0 + (tl.PlotX1-tl.PlotX0)*float64(t.Sub(start))/float64(span)
	}
	for i, l := range leases {
		lane := TimelineLane{
			Y: float64(tlTop + i*tlLaneH), Epoch: l.Epoch, Worker: l.Worker, WorkerLabel: workerLabel(l.Worker),
			Outcome:    "active",
			StaleCalls: l.StaleCalls, LeaseID: l.ID,
		}
		ended := now
		if l.EndedAt != nil {
			ended = *l.EndedAt
		}
		if l.Outcome != nil {
			lane.Outcome = string(*l.Outcome)
		}
		lane.X = x(l.AcquiredAt)
		lane.W = max(x(ended)-lane.X, tlMinBarW)
		lane.Title = fmt.Sprintf("epoch %d · %s · %s\n%s → %s (%s)", l.Epoch, l.Worker, stateTitle(lane.Outcome),
			formatTime(l.AcquiredAt), endLabel(l), formatDuration(ended.Sub(l.AcquiredAt)))
		if l.EndedAt == nil && l.ExpiresAt.After(now) {
			lane.TailX = lane.X + lane.W
			end := x(l.ExpiresAt)
			if end > tl.PlotX1 {
				end = tl.PlotX1
				lane.TailLabel = "expires " + l.ExpiresAt.UTC().Format("15:04")
			}
			lane.TailW = end - lane.TailX
		}
		for _, o := range obs[l.ID] {
			lane.Marks = append(lane.Marks, TimelineMark{
				X:     x(o.ReceivedAt),
				Title: fmt.Sprintf("refused %s (%s) at %s", o.Operation, stateTitle(o.Kind), formatTime(o.ReceivedAt)),
			})
		}
		lane.StaleX = staleLabelX(lane)
		tl.Lanes = append(tl.Lanes, lane)
	}
	tl.AxisY = float64(tlTop + len(leases)*tlLaneH + 4)
	tl.Height = int(tl.AxisY) + tlAxisH
	step, layout := tickStep(span)
	for t := start.Truncate(step).Add(step); t.Before(end); t = t.Add(step) {
		tl.Ticks = append(tl.Ticks, TimelineTick{X: x(t), Label: t.UTC().Format(layout)})
	}
	return tl
}

// staleLabelX places a lane's "N refused" label right of whatever the lane
// draws last (its bar, its tail, its rightmost mark), so that it reads as
// the marks' caption, within the picture.
func staleLabelX(l TimelineLane) float64 {
	right := l.X + l.W
	if l.TailW > 0 {
		right = l.TailX + l.TailW
	}
	for _, m := range l.Marks {
		right = max(right, m.X+5) // a mark is 10 wide around its X
	}
	return min(right+tlStaleGap, tlWidth-tlStaleLabelW)
}

func endLabel(l lease.Lease) string {
	if l.EndedAt == nil {
		return "now (expires " + formatTime(l.ExpiresAt) + ")"
	}
	return formatTime(*l.EndedAt)
}

// tickStep picks a round step giving at most seven ticks over span, and the
// time layout that suits it.
func tickStep(span time.Duration) (time.Duration, string) {
	steps := []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
		24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour,
	}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	switch {
	case step < time.Minute:
		return step, "15:04:05"
	case step < 24*time.Hour:
		return step, "15:04"
	default:
		return step, "Jan 2"
	}
}

// tlWorkerCells is how many character cells of a worker's name fit in the
// timeline's label column (from x = 78 to the plot at tlLabelW, at the
// label's font size).
const tlWorkerCells = 16

// workerLabel cuts a worker's name to tlWorkerCells cells, ending it with
// "…" when cut; a wide character (CJK and the like) takes two cells.
func workerLabel(name string) string {
	cells := func(r rune) int {
		if r >= 0x2E80 {
			return 2
		}
		return 1
	}
	n := 0
	for _, r := range name {
		n += cells(r)
	}
	if n <= tlWorkerCells {
		return name
	}
	var b strings.Builder
	n = 0
	for _, r := range name {
		if n+cells(r) > tlWorkerCells-1 {
			break
		}
		n += cells(r)
		b.WriteRune(r)
	}
	return b.String() + "…"
}
