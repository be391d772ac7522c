package api

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/wire"
)

// jsonMembers lists the JSON member names of a struct type.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestDecodersAcceptTheWireRequests fails when a handler's request struct
// (which records which members were present) and the wire type a client
// sends name different members: the server would refuse a member the
// client sends, or accept one the contract does not have.
func TestDecodersAcceptTheWireRequests(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ server, wire any }{
		{createProjectRequest{}, wire.CreateProjectRequest{}},
		{createTokenRequest{}, wire.CreateTokenRequest{}},
		{createItemRequest{}, wire.CreateItemRequest{}},
		{updateItemRequest{}, wire.UpdateItemRequest{}},
		{cancelRequest{}, wire.CancelRequest{}},
		{addDependencyRequest{}, wire.AddDependencyRequest{}},
		{holdRequest{}, wire.HoldRequest{}},
		{claimRequest{}, wire.ClaimRequest{}},
		{heartbeatRequest{}, wire.HeartbeatRequest{}},
		{completeRequest{}, wire.CompleteRequest{}},
		{releaseRequest{}, wire.ReleaseRequest{}},
		{failRequest{}, wire.FailRequest{}},
		{decomposeRequest{}, wire.DecomposeRequest{}},
		{childRequest{}, wire.Child{}},
		{askRequest{}, wire.AskRequest{}},
		{stopRequest{}, wire.StopRequest{}},
		{resolveRequest{}, wire.ResolveRequest{}},
		{dismissRequest{}, wire.DismissRequest{}},
		{updateProjectRequest{}, wire.UpdateProjectRequest{}},
		{planItemRequest{}, wire.PlanItem{}},
		{planRequest{}, wire.PlanRequest{}},
		{createWebhookRequest{}, wire.CreateWebhookRequest{}},
		{updateWebhookRequest{}, wire.UpdateWebhookRequest{}},
		{updateNotificationsRequest{}, wire.UpdateNotificationSettingsRequest{}},
	} {
		s, w := jsonMembers(reflect.TypeOf(c.server)), jsonMembers(reflect.TypeOf(c.wire))
		if !slices.Equal(s, w) {
			t.Errorf("%T decodes %v, %T sends %v", c.server, s, c.wire, w)
		}
	}
}
