package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestItemPageShowsPlanKey: an item imported from a plan shows its key in
// the plan (where a person finds it in the plan file); one created alone
// shows none.
func TestItemPageShowsPlanKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.graph.ImportPlan(context.Background(), e.project.ID,
		[]graph.PlanItem{{Key: "db-schema", Title: "Write the migration"}}, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	alone := e.mustItem("Alone")
	bw := e.signIn(e.human)

	r := bw.get("/p/acme/items/" + res.Keys["db-schema"].String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `<code id="plan-key"`, ">db-schema</code>")

	r = bw.get("/p/acme/items/" + alone.ID.String())
	wantStatus(t, r, http.StatusOK)
	if strings.Contains(r.body, `id="plan-key"`) {
		t.Errorf("an item created alone shows a plan key")
	}
}
