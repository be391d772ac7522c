package web

import (
	"cmp"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"runtime"
	"slices"
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
// once and at most half of them for one project, so no project's pictures
// wait for another's; a layout that fails affects only its own request.
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

// drawPlan is what a picture will draw, decided before any layout.
type drawPlan struct {
	edges  []graphEdge
	rank   []int
	reason string // set when the graph is summarised instead
}

// planDrawing bounds a picture: all its arrows when they fit the limits,
// else only those no longer chain implies (the critical path's arrows are
// always kept), else a summary. Its cost is O(n + e) plus O(e·n/64) for
// the reduction, with n at most MaxNodes.
func planDrawing(nodes []graphNode, edges []graphEdge, lim DrawLimits) drawPlan {
	index := make(map[uuid.UUID]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	var pairs [][2]int
	var kept []graphEdge
	for _, e := range edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 && from != to {
			pairs = append(pairs, [2]int{from, to})
			kept = append(kept, e)
		}
	}
	rank := ranks(len(nodes), pairs)
	p := drawPlan{edges: kept, rank: rank}
	if len(nodes) > lim.MaxNodes {
		p.reason = fmt.Sprintf("%d items are more than the %d a picture draws", len(nodes), lim.MaxNodes)
		return p
	}
	if len(pairs) <= lim.MaxEdges && cells(rank, pairs) <= lim.MaxCells {
		return p
	}
	keep := make([]bool, len(kept))
	for i, e := range kept {
		keep[i] = e.Critical
	}
	reduced, ok := transitiveReduction(len(nodes), pairs, keep)
	if ok {
		var rp [][2]int
		var re []graphEdge
		for _, i := range reduced {
			rp, re = append(rp, pairs[i]), append(re, kept[i])
		}
		rank = ranks(len(nodes), rp)
		if len(rp) <= lim.MaxEdges && cells(rank, rp) <= lim.MaxCells {
			return drawPlan{edges: re, rank: rank}
		}
		p.rank = rank
	}
	p.reason = fmt.Sprintf("%d items with %d arrows are more than a picture draws (at most %d arrows, %d items and bends)",
		len(nodes), len(pairs), lim.MaxEdges, lim.MaxCells)
	return p
}

// summary lists the nodes level by level.
func (p drawPlan) summary(nodes []graphNode) drawing {
	levels := 0
	for _, r := range p.rank {
		levels = max(levels, r+1)
	}
	out := make([]drawLevel, levels)
	for i, n := range nodes {
		out[p.rank[i]].Items = append(out[p.rank[i]].Items, n)
	}
	for i := range out {
		out[i].Level = i + 1
	}
	return drawing{Summary: out, Reason: p.reason, Items: len(nodes), Arrows: len(p.edges)}
}

// transitiveReduction returns the indexes of the edges that no other path
// implies, plus those marked keep; ok is false when the graph has a cycle.
// Duplicate edges keep their first. Cost O(e·n/64).
func transitiveReduction(n int, edges [][2]int, keep []bool) ([]int, bool) {
	out := make([][]int, n) // edge indexes by tail
	indeg := make([]int, n)
	for i, e := range edges {
		out[e[0]] = append(out[e[0]], i)
		indeg[e[1]]++
	}
	var topo []int
	for v := range n {
		if indeg[v] == 0 {
			topo = append(topo, v)
		}
	}
	for i := 0; i < len(topo); i++ {
		for _, ei := range out[topo[i]] {
			if w := edges[ei][1]; indeg[w]-1 == 0 {
				topo = append(topo, w)
				indeg[w] = 0
			} else {
				indeg[w]--
			}
		}
	}
	if len(topo) != n {
		return nil, false
	}
	pos := make([]int, n)
	for i, v := range topo {
		pos[v] = i
	}
	words := (n + 63) / 64
	reach := make([][]uint64, n) // reach[v]: nodes reachable from v
	var kept []int
	for i := n - 1; i >= 0; i-- {
		v := topo[i]
		succ := out[v]
		// nearest successors first: a farther one can only be implied by
		// a nearer one
		sorted := slices.Clone(succ)
		slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(pos[edges[a][1]], pos[edges[b][1]]) })
		r := make([]uint64, words)
		for _, ei := range sorted {
			w := edges[ei][1]
			covered := r[w/64]&(1<<(w%64)) != 0
			if !covered || (keep[ei] && !keptAlready(edges[ei], edges, kept)) {
				kept = append(kept, ei)
			}
			r[w/64] |= 1 << (w % 64)
			for k, x := range reach[w] {
				r[k] |= x
			}
		}
		reach[v] = r
	}
	return kept, true
}

// keptAlready reports whether an edge with the same ends is already kept,
// so that a duplicate of a kept arrow is drawn once.
func keptAlready(e [2]int, edges [][2]int, kept []int) bool {
	for _, k := range kept {
		if edges[k] == e {
			return true
		}
	}
	return false
}

// drawKey is a digest of everything a picture shows.
func drawKey(nodes []graphNode, edges []graphEdge, vertical bool) [32]byte {
	h := sha256.New()
	var buf [8]byte
	str := func(s string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	flag := func(b bool) {
		if b {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	flag(vertical)
	binary.BigEndian.PutUint64(buf[:], uint64(len(nodes)))
	h.Write(buf[:])
	for _, n := range nodes {
		h.Write(n.ID[:])
		str(n.Title)
		str(n.State)
		str(n.Href)
		flag(n.Focus)
		flag(n.Critical)
	}
	for _, e := range edges {
		h.Write(e.From[:])
		h.Write(e.To[:])
		flag(e.Child)
		flag(e.Critical)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// drawCache keeps the most recently used pictures up to max bytes of SVG.
type drawCache struct {
	max   int
	size  int
	index map[[32]byte]*list.Element
	order *list.List // of *cached, most recent first
}

type cached struct {
	key [32]byte
	dr  drawing
}

func (c *drawCache) get(mu *sync.Mutex, key [32]byte) (drawing, bool) {
	mu.Lock()
	defer mu.Unlock()
	el, ok := c.index[key]
	if !ok {
		return drawing{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached).dr, true
}

func (c *drawCache) put(mu *sync.Mutex, key [32]byte, dr drawing) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := c.index[key]; ok || len(dr.SVG) > c.max {
		return
	}
	c.index[key] = c.order.PushFront(&cached{key: key, dr: dr})
	c.size += len(dr.SVG)
	for c.size > c.max {
		last := c.order.Back()
		old := last.Value.(*cached)
		c.order.Remove(last)
		delete(c.index, old.key)
		c.size -= len(old.dr.SVG)
	}
}
