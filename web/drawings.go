package web

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// DrawLimits bound the graph pictures of one replica. A zero field means
// its default.
type DrawLimits struct {
	// MaxNodes is the most items one picture draws (default 400); a larger
	// graph is summarised without a layout.
	MaxNodes int
	// MaxEdges is the most arrows one picture draws (default 1,000).
	MaxEdges int
	// MaxCells bounds the layout's work: items plus the bends of arrows that
	// span several levels (default 3,000).
	MaxCells int
	// Timeout bounds one layout (default 2 s); a layout that runs out of
	// time gives a summary.
	Timeout time.Duration
	// Slots is how many layouts run at once on the replica (default
	// GOMAXPROCS, at least 2); one project may use at most half of them.
	Slots int
	// CacheBytes bounds the pictures kept for graphs that did not change
	// (default 16 MiB).
	CacheBytes int
}

func (l DrawLimits) withDefaults() DrawLimits {
	if l.MaxNodes <= 0 {
		l.MaxNodes = 400
	}
	if l.MaxEdges <= 0 {
		l.MaxEdges = 1000
	}
	if l.MaxCells <= 0 {
		l.MaxCells = 3000
	}
	if l.Timeout <= 0 {
		l.Timeout = 2 * time.Second
	}
	if l.Slots <= 0 {
		l.Slots = max(runtime.GOMAXPROCS(0), 2)
	}
	if l.CacheBytes <= 0 {
		l.CacheBytes = 16 << 20
	}
	return l
}

// Drawings lays out the dependency-graph pictures of one replica. The cost
// of a picture is bounded before its layout starts: a graph with more
// arrows than the limits allow is drawn without the arrows that longer
// chains imply (its transitive reduction), and one still too large, or
// with too many items, is summarised as a list of levels instead. Layouts
// run in Go under the request's context and a timeout, at most Slots at
// once and at most half of them for one project, so one project's pictures
// cannot take every slot; a layout that fails affects only its own request.
// Pictures are cached by a digest of everything drawn, so a graph that did
// not change is not laid out again.
type Drawings struct {
	lim        DrawLimits
	perProject int
	slots      chan struct{}
	logger     *slog.Logger

	mu       sync.Mutex
	projects map[uuid.UUID]*projectSlots
	cache    drawCache

	layouts atomic.Int64
	// hook, set by tests only, runs at the start of every layout.
	hook func(ctx context.Context, project uuid.UUID) error
}

type projectSlots struct {
	ch    chan struct{}
	users int
}

// NewDrawings returns the drawings of a replica with the given limits.
func NewDrawings(l DrawLimits) *Drawings {
	l = l.withDefaults()
	return &Drawings{
		lim: l, perProject: max(l.Slots/2, 1), slots: make(chan struct{}, l.Slots),
		projects: map[uuid.UUID]*projectSlots{},
		cache:    drawCache{max: l.CacheBytes, index: map[[32]byte]*list.Element{}, order: list.New()},
	}
}

// drawing is a picture ready for a page: an SVG, or a summary when the
// graph was too large to draw (Reason says why).
type drawing struct {
	SVG template.HTML
	// Width is the picture's natural width in pixels.
	Width float64
	// Omitted is how many arrows were left out because longer chains
	// imply them.
	Omitted int
	Summary []drawLevel
	Reason  string
	Items   int
	Arrows  int
}

// drawLevel is one level of a summary: items that wait only for items of
// earlier levels.
type drawLevel struct {
	Level int
	Items []graphNode
}

// draw returns the picture of a project's nodes and edges. It returns an
// error only when ctx ends first; a layout that fails or runs out of time
// gives a summary.
func (d *Drawings) draw(ctx context.Context, project uuid.UUID, nodes []graphNode, edges []graphEdge, vertical bool) (drawing, error) {
	if len(nodes) == 0 {
		return drawing{}, nil
	}
	key := drawKey(nodes, edges, vertical)
	if dr, ok := d.cache.get(&d.mu, key); ok {
		return dr, nil
	}
	plan := planDrawing(nodes, edges, d.lim)
	if plan.reason != "" {
		return plan.summary(nodes), nil
	}
	release, err := d.acquire(ctx, project)
	if err != nil {
		return drawing{}, err
	}
	defer release()
	lctx, cancel := context.WithTimeout(ctx, d.lim.Timeout)
	defer cancel()
	svg, width, err := d.layout(lctx, project, nodes, plan.edges, vertical)
	if err != nil {
		if ctx.Err() != nil {
			return drawing{}, ctx.Err()
		}
		why := "the layout failed"
		if errors.Is(err, context.DeadlineExceeded) {
			why = "the layout took longer than " + d.lim.Timeout.String()
		}
		if d.logger != nil {
			d.logger.Warn("web: graph layout", "project", project, "items", len(nodes), "arrows", len(plan.edges), "err", err)
		}
		plan.reason = "the picture could not be drawn (" + why + ")"
		return plan.summary(nodes), nil
	}
	dr := drawing{SVG: svg, Width: width, Omitted: len(edges) - len(plan.edges), Items: len(nodes), Arrows: len(plan.edges)}
	d.cache.put(&d.mu, key, dr)
	return dr, nil
}

// layout runs one layout, turning a panic into an error so that a crash
// fails only this picture.
func (d *Drawings) layout(ctx context.Context, project uuid.UUID, nodes []graphNode, edges []graphEdge, vertical bool) (svg template.HTML, width float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			svg, err = "", fmt.Errorf("web: graph layout panicked: %v", p)
		}
	}()
	d.layouts.Add(1)
	if d.hook != nil {
		if err := d.hook(ctx, project); err != nil {
			return "", 0, err
		}
	}
	return renderGraphSVG(ctx, nodes, edges, vertical)
}

// acquire waits for a layout slot of the project and of the replica.
func (d *Drawings) acquire(ctx context.Context, project uuid.UUID) (func(), error) {
	d.mu.Lock()
	ps := d.projects[project]
	if ps == nil {
		ps = &projectSlots{ch: make(chan struct{}, d.perProject)}
		d.projects[project] = ps
	}
	ps.users++
	d.mu.Unlock()
	leave := func() {
		d.mu.Lock()
		if ps.users--; ps.users == 0 {
			delete(d.projects, project)
		}
		d.mu.Unlock()
	}
	select {
	case ps.ch <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		<-ps.ch
		leave()
		return nil, ctx.Err()
	}
	return func() { <-d.slots; <-ps.ch; leave() }, nil
}
