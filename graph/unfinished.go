package graph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// WaitsForWork reports whether the open item waits for a dependency or an
// open child: it cannot be done (item_finishable, migration 00064).
func WaitsForWork(it Item) bool {
	return it.Status == StatusOpen && (len(it.BlockedBy.Dependencies) > 0 || len(it.BlockedBy.Children) > 0)
}

// unfinishedNamed is how many unfinished items UnfinishedWork names (the
// ids it returns are all of them).
const unfinishedNamed = 3

// UnfinishedWork describes the work the item waits for, for a refusal to
// mark it done ("1 unfinished dependency ("t" id) and 2 open children
// (...)", naming the first few of each by title and id; "" when it waits
// for none), and returns the ids of its unfinished dependencies and open
// children.
func UnfinishedWork(it Item) (what string, dependencies, children []uuid.UUID) {
	dependencies, children = refIDs(it.BlockedBy.Dependencies), refIDs(it.BlockedBy.Children)
	var parts []string
	if n := len(dependencies); n > 0 {
		parts = append(parts, plural(n, "unfinished dependency", "unfinished dependencies")+" ("+refNames(it.BlockedBy.Dependencies)+")")
	}
	if n := len(children); n > 0 {
		parts = append(parts, plural(n, "open child", "open children")+" ("+refNames(it.BlockedBy.Children)+")")
	}
	return strings.Join(parts, " and "), dependencies, children
}

// blockedFinish is the refusal of a person's decision to mark the open
// item it done while it waits for work: its details list the unfinished
// dependencies and children ("dependencies", "children") and the item.
func blockedFinish(it Item) *wgerr.Error {
	what, deps, kids := UnfinishedWork(it)
	if what == "" {
		what = "work that was unfinished when the decision ran"
	}
	return &wgerr.Error{
		Code: wgerr.CodeBlocked,
		Message: "item " + it.ID.String() + " cannot be done: it waits for " + what +
			"; finish or cancel that work first, or decide otherwise (retry, cancel)",
		Details: map[string]any{"item_id": it.ID, "dependencies": deps, "children": kids},
	}
}

func refIDs(refs []ItemRef) []uuid.UUID {
	out := make([]uuid.UUID, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// refNames names the first unfinishedNamed items of refs by title and id.
func refNames(refs []ItemRef) string {
	var names []string
	for _, r := range refs[:min(len(refs), unfinishedNamed)] {
		names = append(names, strconv.Quote(r.Title)+" "+r.ID.String())
	}
	if len(refs) > unfinishedNamed {
		names = append(names, fmt.Sprintf("%d more", len(refs)-unfinishedNamed))
	}
	return strings.Join(names, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
