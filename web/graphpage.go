package web

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
)

// GraphPage is the dependency graph as a picture: a whole project, or the
// items around one item.
type GraphPage struct {
	Layout
	Around    *graph.Item
	Depth     int
	Limit     int
	Nodes     int
	Truncated bool
	Critical  []graph.ItemRef
	Drawing   drawing
	Big       bool
}

// DepthChoices are the depths offered around an item.
func (p *GraphPage) DepthChoices() []int { return []int{1, 2, 3, 4, 6, 10} }

// Render writes the page.
func (p *GraphPage) Render(w http.ResponseWriter) error { return render(w, "graph", p) }

// projectGraphLimit is the most nodes a project picture draws.
const projectGraphLimit = 400

func (u *ui) projectGraph(r *req) error {
	sg, err := u.Graph.Subgraph(r.ctx(), r.project.ID, nil, 0, projectGraphLimit)
	if err != nil {
		return err
	}
	dr, err := r.picture(sg, sg.CriticalPath, nil, false)
	if err != nil {
		return err
	}
	page := &GraphPage{
		Limit: projectGraphLimit, Nodes: len(sg.Nodes), Truncated: sg.Truncated, Drawing: dr,
		Critical: refsOf(sg, sg.CriticalPath), Big: dr.wide(),
	}
	page.Layout = r.base("Graph", "graph")
	return r.show(page)
}

func (u *ui) itemGraph(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	depth, _ := strconv.Atoi(r.QueryParam("depth"))
	if depth <= 0 || depth > 10 {
		depth = 2
	}
	sg, err := u.Graph.Subgraph(r.ctx(), r.project.ID, &item.ID, depth, projectGraphLimit)
	if err != nil {
		return err
	}
	path, err := r.criticalIDs(item.ID)
	if err != nil {
		return err
	}
	dr, err := r.picture(sg, path, &item.ID, false)
	if err != nil {
		return err
	}
	page := &GraphPage{
		Around: &item, Depth: depth, Limit: projectGraphLimit, Nodes: len(sg.Nodes), Truncated: sg.Truncated,
		Drawing: dr, Critical: refsOf(sg, path), Big: dr.wide(),
	}
	page.Layout = r.base("Graph around "+item.Title, "graph")
	return r.show(page)
}

// pictureAround is the small picture on an item page.
func (r *req) pictureAround(id uuid.UUID, depth, limit int) (drawing, error) {
	sg, err := r.ui.Graph.Subgraph(r.ctx(), r.project.ID, &id, depth, limit)
	if err != nil || len(sg.Nodes) <= 1 {
		return drawing{}, err
	}
	path, err := r.criticalIDs(id)
	if err != nil {
		return drawing{}, err
	}
	return r.picture(sg, path, &id, true)
}

// criticalIDs is the critical path ending at an item (its longest chain of
// unfinished prerequisites), or nothing when the item has none.
func (r *req) criticalIDs(id uuid.UUID) ([]uuid.UUID, error) {
	refs, err := r.ui.Graph.CriticalPath(r.ctx(), r.project.ID, id)
	if err != nil || len(refs) < 2 {
		return nil, err
	}
	ids := make([]uuid.UUID, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	return ids, nil
}

// picture draws a subgraph with the critical path (first prerequisite
// first) highlighted and the focus item outlined, within the replica's
// drawing limits (a summary when it is too large).
func (r *req) picture(sg graph.Subgraph, path []uuid.UUID, focus *uuid.UUID, vertical bool) (drawing, error) {
	onPath := map[uuid.UUID]bool{}
	next := map[uuid.UUID]uuid.UUID{}
	for i, id := range path {
		onPath[id] = true
		if i+1 < len(path) {
			next[id] = path[i+1]
		}
	}
	nodes := make([]graphNode, 0, len(sg.Nodes))
	for _, n := range sg.Nodes {
		nodes = append(nodes, graphNode{
			ID: n.ID, Title: n.Title, State: string(n.State),
			Href:     r.projectURL("/items/" + n.ID.String()),
			Focus:    focus != nil && *focus == n.ID,
			Critical: onPath[n.ID],
		})
	}
	edges := make([]graphEdge, 0, len(sg.Edges))
	for _, e := range sg.Edges {
		var ge graphEdge
		switch e.Kind {
		case graph.EdgeChildOf: // the parent waits for its child
			ge = graphEdge{From: e.From, To: e.To, Child: true}
		default: // e.From depends on e.To: e.To comes first
			ge = graphEdge{From: e.To, To: e.From}
		}
		ge.Critical = onPath[ge.From] && next[ge.From] == ge.To
		edges = append(edges, ge)
	}
	return r.ui.Drawings.draw(r.ctx(), r.project.ID, nodes, edges, vertical)
}

// wide reports whether a picture would be unreadable scaled down to the
// page's width: it is shown at its natural size and scrolls instead.
func (d drawing) wide() bool { return d.Width > 1800 }

// refsOf names the path's items from the subgraph's nodes.
func refsOf(sg graph.Subgraph, path []uuid.UUID) []graph.ItemRef {
	byID := make(map[uuid.UUID]graph.ItemRef, len(sg.Nodes))
	for _, n := range sg.Nodes {
		byID[n.ID] = n
	}
	var out []graph.ItemRef
	for _, id := range path {
		if ref, ok := byID[id]; ok {
			out = append(out, ref)
		}
	}
	return out
}
