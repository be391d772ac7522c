package client_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/api/openapi"
	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// clientMethods maps every operation of openapi.json to the Client method
// that calls it ("" for the one a client has no use for).
var clientMethods = map[string]string{
	"createProject":              "CreateProject",
	"listProjects":               "ListProjects",
	"getProject":                 "GetProject",
	"updateProject":              "UpdateProject",
	"createToken":                "CreateToken",
	"listTokens":                 "ListTokens",
	"revokeToken":                "RevokeToken",
	"lookupIDs":                  "LookupIDs",
	"createItem":                 "CreateItem",
	"listItems":                  "ListItems",
	"getItem":                    "GetItem",
	"updateItem":                 "UpdateItem",
	"cancelItem":                 "CancelItem",
	"addDependency":              "AddDependency",
	"removeDependency":           "RemoveDependency",
	"itemGraph":                  "ItemGraph",
	"projectGraph":               "ProjectGraph",
	"itemLeases":                 "ItemLeases",
	"holdItem":                   "Hold",
	"itemAttention":              "ItemAttention",
	"importPlan":                 "ImportPlan",
	"claim":                      "Claim",
	"heartbeat":                  "Heartbeat",
	"complete":                   "Complete",
	"release":                    "Release",
	"fail":                       "Fail",
	"decompose":                  "Decompose",
	"ask":                        "Ask",
	"requestStop":                "RequestStop",
	"getLease":                   "GetLease",
	"leaseHistory":               "History",
	"workers":                    "Workers",
	"listAttention":              "ListAttention",
	"getAttention":               "GetAttention",
	"resolveAttention":           "Resolve",
	"dismissAttention":           "Dismiss",
	"getOpenAPI":                 "",
	"fenceKeys":                  "FenceKeys",
	"createWebhook":              "CreateWebhook",
	"listWebhooks":               "ListWebhooks",
	"getWebhook":                 "GetWebhook",
	"updateWebhook":              "UpdateWebhook",
	"deleteWebhook":              "DeleteWebhook",
	"rotateWebhookSecret":        "RotateWebhookSecret",
	"listDeliveries":             "ListDeliveries",
	"getNotificationSettings":    "NotificationSettings",
	"updateNotificationSettings": "UpdateNotificationSettings",
	"listEvents":                 "Events",
	"streamEvents":               "Stream",
	"listAllEvents":              "Events",
	"streamAllEvents":            "Stream",
	"completeBatch":              "CompleteBatch",
	"heartbeatBatch":             "HeartbeatBatch",
	"getBudget":                  "GetBudget",
	"setBudget":                  "SetBudget",
	"itemCost":                   "ItemCost",
}

// TestClientCoversEveryOperation: the Go client has a method for every
// operation of the API, so a Go program never has to hand-roll a request
// (and its retries and Idempotency-Key) for one of them.
func TestClientCoversEveryOperation(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(&client.Client{})
	for _, op := range doc.Operations() {
		name, ok := clientMethods[op.ID]
		if !ok {
			t.Errorf("%s %s (%s): no Client method is listed for it", op.Method, op.Path, op.ID)
			continue
		}
		if _, ok := typ.MethodByName(name); name != "" && !ok {
			t.Errorf("%s %s (%s): Client has no method %s", op.Method, op.Path, op.ID, name)
		}
	}
}

// TestPeopleCalls: a person's calls of the client that a worker does not
// make (a hold, a dismissal, an item's requests, the graphs, the workers,
// one project) reach their routes and decode their answers.
func TestPeopleCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, agent, _ := agentOn(t, dbtest.URL(t))
	admin, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	p, err := admin.GetProject(ctx, "p")
	if err != nil || p.Name != "p" {
		t.Fatalf("GetProject: %+v, %v", p, err)
	}
	if _, err := agent.GetProject(ctx, "nope"); err == nil {
		t.Fatal("GetProject of a missing project: no error")
	}
	page, err := admin.ListItems(ctx, "p", client.ListItemsOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("items: %+v, %v", page, err)
	}
	first := page.Items[0]
	second, err := admin.CreateItem(ctx, "p", client.CreateItemRequest{Title: "after", DependsOn: []string{first.ID}})
	if err != nil {
		t.Fatal(err)
	}

	hold, err := admin.Hold(ctx, "p", first.ID, "wait for the review")
	if err != nil || hold.State != "open" || !hold.Blocking || hold.Question != "wait for the review" {
		t.Fatalf("Hold: %+v, %v", hold, err)
	}
	if _, err := agent.Hold(ctx, "p", first.ID, ""); err == nil {
		t.Fatal("an agent's hold: no error")
	}
	if it, err := admin.GetItem(ctx, "p", first.ID); err != nil || it.State != client.StateAttention {
		t.Fatalf("held item: %+v, %v", it, err)
	}
	dismissed, err := admin.Dismiss(ctx, hold.ID, "reviewed")
	if err != nil || dismissed.State != "dismissed" || dismissed.Answer == nil || *dismissed.Answer != "reviewed" {
		t.Fatalf("Dismiss: %+v, %v", dismissed, err)
	}
	if _, err := admin.Dismiss(ctx, hold.ID, ""); err == nil {
		t.Fatal("a second dismissal: no error")
	}
	reqs, err := agent.ItemAttention(ctx, "p", first.ID, client.ItemAttentionOptions{})
	if err != nil || len(reqs.Attention) != 1 || reqs.Attention[0].ID != hold.ID || reqs.Attention[0].State != "dismissed" ||
		reqs.NextCursor != nil {
		t.Fatalf("ItemAttention: %+v, %v", reqs, err)
	}

	g, err := agent.ItemGraph(ctx, "p", second.ID)
	if err != nil || g.Item.ID != second.ID || len(g.Dependencies) != 1 || g.Dependencies[0].ID != first.ID {
		t.Fatalf("ItemGraph: %+v, %v", g, err)
	}
	sub, err := agent.ProjectGraph(ctx, "p", client.GraphOptions{Around: first.ID, Depth: 1})
	if err != nil || len(sub.Nodes) != 2 || len(sub.Edges) != 1 || sub.Edges[0].From != second.ID || sub.Edges[0].To != first.ID {
		t.Fatalf("ProjectGraph: %+v, %v", sub, err)
	}

	cl, err := agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.Workers(ctx, "p", client.WorkersOptions{})
	if err != nil || len(w.Active) != 1 || w.Active[0].ID != cl.Lease.ID || len(w.Activity) != 1 {
		t.Fatalf("Workers: %+v, %v", w, err)
	}
}

// TestUpdateItemOnExpiryBackToDefault: UpdateItem can set an item's
// on_expiry and take it back to the project's default (the API's null),
// which an OnExpiry of "" sends.
func TestUpdateItemOnExpiryBackToDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _, _ := agentOn(t, dbtest.URL(t))
	admin, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	it, err := admin.CreateItem(ctx, "p", client.CreateItemRequest{Title: "deploy", OnExpiry: client.OnExpiryReconcile})
	if err != nil || it.OnExpiry == nil || *it.OnExpiry != client.OnExpiryReconcile {
		t.Fatalf("created: %+v, %v", it, err)
	}
	back := ""
	it, err = admin.UpdateItem(ctx, "p", it.ID, client.UpdateItemRequest{OnExpiry: &back})
	if err != nil {
		t.Fatal(err)
	}
	if it.OnExpiry != nil {
		t.Fatalf("on_expiry %q after going back to the project's default, want null", *it.OnExpiry)
	}
	// Absent leaves it as it is.
	retry := client.OnExpiryRetry
	if it, err = admin.UpdateItem(ctx, "p", it.ID, client.UpdateItemRequest{OnExpiry: &retry}); err != nil {
		t.Fatal(err)
	}
	title := "deploy 1.4"
	if it, err = admin.UpdateItem(ctx, "p", it.ID, client.UpdateItemRequest{Title: &title}); err != nil || it.OnExpiry == nil || *it.OnExpiry != retry {
		t.Fatalf("after an edit of the title: %+v, %v", it, err)
	}
}
