package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/api/openapi"
	"github.com/workgraph-dev/workgraph/client"
)

// TestListJSONIsTheAPIShape fails when a listing command's --json output
// is not the API's page of the same list (schema ItemPage, LeasePage,
// AttentionPage): the same member names, next_cursor null on the last page.
func TestListJSONIsTheAPIShape(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.item("asks a question")
	cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Ask(ctx, cl.Lease.ID, client.AskRequest{Epoch: cl.Lease.Epoch, Question: "which one?"}); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		args   []string
	}{
		{"AttentionPage", []string{"attention", "ls"}},
		{"ItemPage", []string{"items", "ls", "--all"}},
		{"LeasePage", []string{"history", "--all"}},
	} {
		t.Run(c.schema, func(t *testing.T) {
			r := e.run(e.humanToken, nil, append(c.args, "--json")...)
			if r.code != 0 {
				t.Fatalf("workgraph %v --json: %v", c.args, r)
			}
			if err := doc.CheckSchema(c.schema, []byte(r.stdout)); err != nil {
				t.Fatalf("workgraph %v --json: %v", c.args, err)
			}
			var page map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
				t.Fatal(err)
			}
			if cur, ok := page["next_cursor"]; !ok || cur != nil {
				t.Fatalf("workgraph %v --json: next_cursor %#v on the last page, want null", c.args, cur)
			}
		})
	}
}

// TestEmptyListJSONIsAnArray fails when a listing command answers an empty
// list as null in --json: the API answers [], and a script's
// `jq '.items[]'` fails on null ("Cannot iterate over null").
func TestEmptyListJSONIsAnArray(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, c := range []struct {
		member string
		args   []string
	}{
		{"attention", []string{"attention", "ls"}},
		{"items", []string{"items", "ls"}},
		{"items", []string{"items", "ls", "--all"}},
		{"leases", []string{"history"}},
		{"leases", []string{"history", "--all"}},
	} {
		r := e.run(e.humanToken, nil, append(c.args, "--json")...)
		if r.code != 0 {
			t.Fatalf("workgraph %v --json: %v", c.args, r)
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("workgraph %v --json: %v\n%s", c.args, err, r.stdout)
		}
		if got := string(page[c.member]); got != "[]" {
			t.Errorf("workgraph %v --json: %s is %s on an empty project, want []", c.args, c.member, got)
		}
	}
}
