package wire_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/wire"
)

// types maps each answer schema of openapi.json to its wire type.
var types = map[string]any{
	"Project": wire.Project{}, "ProjectList": wire.ProjectList{},
	"Token": wire.Token{}, "IDMatch": wire.IDMatch{}, "IDMatches": wire.IDMatches{}, "CreatedToken": wire.CreatedToken{}, "TokenList": wire.TokenList{},
	"ItemRef": wire.ItemRef{}, "BlockedBy": wire.BlockedBy{}, "Item": wire.Item{}, "ItemPage": wire.ItemPage{},
	"Lease": wire.Lease{}, "Observation": wire.Observation{}, "LeaseDetail": wire.LeaseDetail{}, "LeasePage": wire.LeasePage{},
	"AttentionRequest": wire.AttentionRequest{}, "AttentionPage": wire.AttentionPage{},
	"Claim": wire.Claim{}, "HeartbeatResult": wire.Heartbeat{}, "Completion": wire.Completion{}, "LeaseItem": wire.LeaseItem{},
	"FailResult": wire.FailResult{}, "Decomposition": wire.Decomposition{}, "AskResult": wire.AskResult{},
	"Dependency": wire.Dependency{}, "ItemGraph": wire.ItemGraph{}, "Subgraph": wire.Subgraph{}, "Workers": wire.Workers{},
	"PlanResult": wire.PlanResult{},
	"Webhook":    wire.Webhook{}, "CreatedWebhook": wire.CreatedWebhook{}, "WebhookList": wire.WebhookList{},
	"Delivery": wire.Delivery{}, "DeliveryList": wire.DeliveryList{}, "NotificationSettings": wire.NotificationSettings{},
	"CreateWebhookRequest": wire.CreateWebhookRequest{}, "UpdateWebhookRequest": wire.UpdateWebhookRequest{},
	"UpdateNotificationSettingsRequest": wire.UpdateNotificationSettingsRequest{},
	"Event":                             wire.Event{}, "EventPage": wire.EventPage{},
	"ClaimBatch": wire.ClaimBatch{}, "CompletionAnswer": wire.CompletionAnswer{}, "Completions": wire.Completions{},
	"HeartbeatAnswer": wire.HeartbeatAnswer{}, "Heartbeats": wire.Heartbeats{},
	"Usage": wire.Usage{}, "LeaseActivity": wire.LeaseActivity{}, "Budget": wire.Budget{}, "ItemCost": wire.ItemCost{},
	"UsageReport": wire.Usage{}, "BudgetRequest": wire.BudgetRequest{},
	// request bodies
	"CreateProjectRequest": wire.CreateProjectRequest{}, "CreateTokenRequest": wire.CreateTokenRequest{},
	"CreateItemRequest": wire.CreateItemRequest{}, "UpdateItemRequest": wire.UpdateItemRequest{},
	"CancelRequest": wire.CancelRequest{}, "AddDependencyRequest": wire.AddDependencyRequest{}, "HoldRequest": wire.HoldRequest{},
	"ClaimRequest": wire.ClaimRequest{}, "HeartbeatRequest": wire.HeartbeatRequest{}, "CompleteRequest": wire.CompleteRequest{},
	"ReleaseRequest": wire.ReleaseRequest{}, "FailRequest": wire.FailRequest{}, "DecomposeRequest": wire.DecomposeRequest{},
	"AskRequest": wire.AskRequest{}, "StopRequest": wire.StopRequest{}, "ResolveRequest": wire.ResolveRequest{},
	"UpdateProjectRequest": wire.UpdateProjectRequest{},
	"DismissRequest":       wire.DismissRequest{}, "PlanItem": wire.PlanItem{}, "PlanRequest": wire.PlanRequest{},
	"DecomposeRequest/properties/children/items": wire.Child{},
	"CompletionEntry": wire.CompletionEntry{}, "HeartbeatEntry": wire.HeartbeatEntry{},
}

// members lists the JSON member names of a struct type (embedded structs
// flattened) and whether each may be omitted.
func members(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			for k, v := range members(f.Type) {
				out[k] = v
			}
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = strings.Contains(opts, "omitempty")
	}
	return out
}

// TestTypesMatchSchemas fails when a wire type and the schema it stands for
// name different members, or when a member the schema requires may be
// omitted.
func TestTypesMatchSchemas(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	type schemaObject struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	// lookup finds a schema by its path under components/schemas.
	lookup := func(path string) (schemaObject, bool) {
		parts := strings.Split(path, "/")
		raw, ok := doc.Components.Schemas[parts[0]]
		for _, p := range parts[1:] {
			var m map[string]json.RawMessage
			if !ok || json.Unmarshal(raw, &m) != nil {
				return schemaObject{}, false
			}
			raw, ok = m[p]
		}
		var s schemaObject
		return s, ok && json.Unmarshal(raw, &s) == nil
	}
	for name, v := range types {
		t.Run(strings.ReplaceAll(name, "/", "."), func(t *testing.T) {
			s, ok := lookup(name)
			if !ok {
				t.Fatalf("schema %s is not in openapi.json", name)
			}
			got := members(reflect.TypeOf(v))
			var schema, typ []string
			for p := range s.Properties {
				schema = append(schema, p)
			}
			for m := range got {
				typ = append(typ, m)
			}
			sort.Strings(schema)
			sort.Strings(typ)
			if !slices.Equal(schema, typ) {
				t.Fatalf("%T has members %v, schema %s has %v", v, typ, name, schema)
			}
			for _, r := range s.Required {
				if got[r] {
					t.Errorf("%T omits %q when empty, but schema %s requires it", v, r, name)
				}
			}
		})
	}
}
