package api_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// inputFixture is a project with one ready item, a live lease (on another
// item), an open attention request and the tokens to act on them, for the
// input tests.
type inputFixture struct {
	itemFixture
	itemID, leaseID, attentionID string
	epoch                        int64
}

func inputSetup(t *testing.T) inputFixture {
	t.Helper()
	f := inputFixture{itemFixture: itemSetup(t)}
	held := f.mustItem(f.human.Token, map[string]any{"title": "held", "priority": 9})
	cl := f.mustClaim("w1")
	if cl.Item.ID != held.ID {
		t.Fatalf("claimed %s, want %s", cl.Item.ID, held.ID)
	}
	f.leaseID, f.epoch = cl.Lease.ID, cl.Lease.Epoch
	f.itemID = f.mustItem(f.human.Token, map[string]any{"title": "ready"}).ID
	onHold := f.mustItem(f.human.Token, map[string]any{"title": "on hold"})
	var a attn
	f.do("POST", "/v1/projects/alpha/items/"+onHold.ID+"/attention", f.human.Token, map[string]any{"question": "wait?"}).ok(t, 201, &a)
	f.attentionID = a.ID
	return f
}

// inputCase is one request carrying a value PostgreSQL cannot store; it
// must be refused as 400 invalid_argument naming field, changing nothing.
type inputCase struct {
	name, method, path, as string // as: human, agent or admin
	body                   string
	field                  string
}

// badInputCases lists, for every route that takes text, a NUL (raw or as
// \u0000) or invalid UTF-8 in each field and parameter. {item}, {lease},
// {attention} and {epoch} are filled in from the fixture.
func badInputCases() []inputCase {
	items := "/v1/projects/alpha/items"
	lease := "/v1/leases/{lease}/"
	nul := `a\u0000b`
	bad := "a\xffb"
	c := []inputCase{
		// Bodies: NUL in every text field.
		{"CreateTitle", "POST", items, "human", `{"title": "` + nul + `"}`, "title"},
		{"CreateBody", "POST", items, "human", `{"title": "t", "body": "` + nul + `"}`, "body"},
		{"CreateLabel", "POST", items, "human", `{"title": "t", "labels": ["ok", "` + nul + `"]}`, "labels[1]"},
		{"CreateMetadataValue", "POST", items, "human", `{"title": "t", "metadata": {"k": "` + nul + `"}}`, "metadata.k"},
		{"CreateMetadataKey", "POST", items, "human", `{"title": "t", "metadata": {"` + nul + `": 1}}`, "metadata"},
		{"CreateMetadataDeep", "POST", items, "human", `{"title": "t", "metadata": {"a": [1, {"b": "` + nul + `"}]}}`, "metadata.a[1].b"},
		{"UpdateTitle", "PATCH", items + "/{item}", "human", `{"title": "` + nul + `"}`, "title"},
		{"UpdateBody", "PATCH", items + "/{item}", "human", `{"body": "` + nul + `"}`, "body"},
		{"UpdateLabels", "PATCH", items + "/{item}", "human", `{"labels": ["` + nul + `"]}`, "labels[0]"},
		{"UpdateMetadata", "PATCH", items + "/{item}", "human", `{"metadata": "` + nul + `"}`, "metadata"},
		{"CancelReason", "POST", items + "/{item}/cancel", "human", `{"reason": "` + nul + `"}`, "reason"},
		{"HoldQuestion", "POST", items + "/{item}/attention", "human", `{"question": "` + nul + `"}`, "question"},
		{"ClaimWorker", "POST", "/v1/projects/alpha/claims", "agent", `{"worker": "` + nul + `"}`, "worker"},
		{"ClaimLabels", "POST", "/v1/projects/alpha/claims", "agent", `{"worker": "w2", "labels": ["` + nul + `"]}`, "labels[0]"},
		{"HeartbeatProgress", "POST", lease + "heartbeat", "agent", `{"epoch": {epoch}, "progress": {"step": "` + nul + `"}}`, "progress.step"},
		{"HeartbeatWorkerTime", "POST", lease + "heartbeat", "agent", `{"epoch": {epoch}, "worker_time": "` + nul + `"}`, "worker_time"},
		{"CompleteResult", "POST", lease + "complete", "agent", `{"epoch": {epoch}, "result": "` + nul + `"}`, "result"},
		{"ReleaseReason", "POST", lease + "release", "agent", `{"epoch": {epoch}, "reason": "` + nul + `"}`, "reason"},
		{"FailError", "POST", lease + "fail", "agent", `{"epoch": {epoch}, "error": "` + nul + `"}`, "error"},
		{"FailErrorObject", "POST", lease + "fail", "agent", `{"epoch": {epoch}, "error": {"message": "` + nul + `"}}`, "error.message"},
		{"FailDetails", "POST", lease + "fail", "agent", `{"epoch": {epoch}, "error": "e", "details": ["` + nul + `"]}`, "details[0]"},
		{"DecomposeTitle", "POST", lease + "decompose", "agent", `{"epoch": {epoch}, "children": [{"key": "a", "title": "` + nul + `"}]}`, "children[0].title"},
		{"DecomposeKey", "POST", lease + "decompose", "agent", `{"epoch": {epoch}, "children": [{"key": "` + nul + `", "title": "t"}]}`, "children[0].key"},
		{"DecomposeLabel", "POST", lease + "decompose", "agent", `{"epoch": {epoch}, "children": [{"key": "a", "title": "t", "labels": ["` + nul + `"]}]}`, "children[0].labels[0]"},
		{"AskQuestion", "POST", lease + "attention", "agent", `{"epoch": {epoch}, "question": "` + nul + `"}`, "question"},
		{"AskSuggested", "POST", lease + "attention", "agent", `{"epoch": {epoch}, "question": "q", "suggested_answers": ["` + nul + `"]}`, "suggested_answers[0]"},
		{"AskContext", "POST", lease + "attention", "agent", `{"epoch": {epoch}, "question": "q", "context": {"` + nul + `": 1}}`, "context"},
		{"StopReason", "POST", lease + "stop", "human", `{"reason": "` + nul + `"}`, "reason"},
		{"ResolveAnswer", "POST", "/v1/attention/{attention}/resolve", "human", `{"answer": "` + nul + `"}`, "answer"},
		{"DismissNote", "POST", "/v1/attention/{attention}/dismiss", "human", `{"note": "` + nul + `"}`, "note"},
		{"PlanTitle", "POST", "/v1/projects/alpha/plans", "human", `{"items": [{"key": "a", "title": "` + nul + `"}]}`, "items[0].title"},
		{"PlanChildKey", "POST", "/v1/projects/alpha/plans", "human", `{"items": [{"key": "a", "title": "t", "children": [{"key": "` + nul + `", "title": "c"}]}]}`, "items[0].children[0].key"},
		{"PlanDependsOn", "POST", "/v1/projects/alpha/plans", "human", `{"items": [{"key": "a", "title": "t", "depends_on": ["` + nul + `"]}]}`, "items[0].depends_on[0]"},
		{"DependencyTarget", "POST", items + "/{item}/dependencies", "human", `{"depends_on": "` + nul + `"}`, "depends_on"},
		{"ProjectName", "POST", "/v1/projects", "admin", `{"name": "` + nul + `"}`, "name"},
		{"TokenName", "POST", "/v1/projects/alpha/tokens", "admin", `{"name": "` + nul + `", "role": "agent"}`, "name"},

		// Raw JSON kept as given: invalid UTF-8, unpaired surrogates and
		// numbers jsonb cannot hold.
		{"MetadataBadUTF8", "POST", items, "human", `{"title": "t", "metadata": {"k": "` + bad + `"}}`, "metadata.k"},
		{"MetadataBadUTF8Key", "POST", items, "human", `{"title": "t", "metadata": {"` + bad + `": 1}}`, "metadata"},
		{"MetadataSurrogate", "POST", items, "human", `{"title": "t", "metadata": {"k": "\ud800"}}`, "metadata.k"},
		{"MetadataLowSurrogate", "POST", items, "human", `{"title": "t", "metadata": {"k": ["\udc00x"]}}`, "metadata.k[0]"},
		{"MetadataHugeNumber", "POST", items, "human", `{"title": "t", "metadata": {"n": 1e1000000}}`, "metadata.n"},
		{"MetadataTinyNumber", "POST", items, "human", `{"title": "t", "metadata": {"n": 1e-20000}}`, "metadata.n"},
		{"UpdateMetadataBadUTF8", "PATCH", items + "/{item}", "human", `{"metadata": {"k": "` + bad + `"}}`, "metadata.k"},
		{"CompleteResultBadUTF8", "POST", lease + "complete", "agent", `{"epoch": {epoch}, "result": {"out": "` + bad + `"}}`, "result.out"},
		{"CompleteResultSurrogate", "POST", lease + "complete", "agent", `{"epoch": {epoch}, "result": "\udfff"}`, "result"},
		{"CompleteResultHugeNumber", "POST", lease + "complete", "agent", `{"epoch": {epoch}, "result": 9e999999999}`, "result"},
		{"HeartbeatProgressBadUTF8", "POST", lease + "heartbeat", "agent", `{"epoch": {epoch}, "progress": "` + bad + `"}`, "progress"},
		{"FailDetailsBadUTF8", "POST", lease + "fail", "agent", `{"epoch": {epoch}, "details": {"x": "` + bad + `"}}`, "details.x"},
		{"AskContextBadUTF8", "POST", lease + "attention", "agent", `{"epoch": {epoch}, "question": "q", "context": ["` + bad + `"]}`, "context[0]"},
		// Text fields too: invalid UTF-8 is refused, not silently replaced.
		{"TitleBadUTF8", "POST", items, "human", `{"title": "` + bad + `"}`, "title"},
		{"AnswerBadUTF8", "POST", "/v1/attention/{attention}/resolve", "human", `{"answer": "` + bad + `"}`, "answer"},
	}
	// Query parameters and path segments, NUL and invalid UTF-8 each.
	for _, v := range []struct{ name, raw string }{{"NUL", "a%00b"}, {"BadUTF8", "a%FFb"}} {
		c = append(c,
			inputCase{"ItemsQ" + v.name, "GET", items + "?q=" + v.raw, "human", "", "q"},
			inputCase{"ItemsLabel" + v.name, "GET", items + "?label=" + v.raw, "human", "", "label"},
			inputCase{"ItemsCursor" + v.name, "GET", items + "?cursor=" + v.raw, "human", "", "cursor"},
			inputCase{"ItemsState" + v.name, "GET", items + "?state=" + v.raw, "human", "", "state"},
			inputCase{"LeasesWorker" + v.name, "GET", "/v1/projects/alpha/leases?worker=" + v.raw, "human", "", "worker"},
			inputCase{"LeasesCursor" + v.name, "GET", "/v1/projects/alpha/leases?cursor=" + v.raw, "human", "", "cursor"},
			inputCase{"ItemLeasesWorker" + v.name, "GET", items + "/{item}/leases?worker=" + v.raw, "human", "", "worker"},
			inputCase{"AttentionCursor" + v.name, "GET", "/v1/projects/alpha/attention?cursor=" + v.raw, "human", "", "cursor"},
			inputCase{"ProjectSegment" + v.name, "GET", "/v1/projects/" + v.raw, "human", "", "project"},
			inputCase{"ProjectSegmentItems" + v.name, "GET", "/v1/projects/" + v.raw + "/items", "human", "", "project"},
			inputCase{"ProjectSegmentClaim" + v.name, "POST", "/v1/projects/" + v.raw + "/claims", "agent", `{"worker": "w3"}`, "project"},
			inputCase{"ProjectSegmentCreate" + v.name, "POST", "/v1/projects/" + v.raw + "/items", "human", `{"title": "t"}`, "project"},
		)
	}
	return c
}

func (f inputFixture) fill(s string) string {
	return strings.NewReplacer("{item}", f.itemID, "{lease}", f.leaseID, "{attention}", f.attentionID,
		"{epoch}", strconv.FormatInt(f.epoch, 10)).Replace(s)
}

func (f inputFixture) token(as string) string {
	switch as {
	case "agent":
		return f.agent.Token
	case "admin":
		return adminToken
	}
	return f.human.Token
}

func TestBadTextIsRefused(t *testing.T) {
	t.Parallel()
	f := inputSetup(t)
	for _, tc := range badInputCases() {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			before := digest(t, f.pool)
			var body any
			if tc.body != "" {
				body = f.fill(tc.body)
			}
			p := f.do(tc.method, f.fill(tc.path), f.token(tc.as), body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
			if after := digest(t, f.pool); after != before {
				t.Fatalf("a refused request changed stored state:\n before %s\n after  %s", before, after)
			}
		})
	}
	// The fixture's lease is still live: nothing above touched it.
	f.t = t
	f.mutate(f.agent.Token, f.leaseID, "heartbeat", map[string]any{"epoch": f.epoch}).ok(t, 200, nil)
}

// TestGoodTextIsKept: what the checks must not refuse (escapes of
// ordinary characters, surrogate pairs, big but storable numbers).
func TestGoodTextIsKept(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{
		"title": "caf\u00e9 \U0001F600", "body": `a\u0000b is text`, "labels": []string{"ok"},
		"metadata": map[string]any{"pair": "\U0001F600", "big": 1e300},
	})
	if it.Title != "caf\u00e9 \U0001F600" {
		t.Fatalf("title %q", it.Title)
	}
	raw := `{"title": "esc \u00e9 \ud83d\ude00 \\u0000", "metadata": {"n": 1e131071, "m": 1e-16383, "s": "\ud83d\ude00"}}`
	var got item
	f.do("POST", "/v1/projects/alpha/items", f.human.Token, raw).ok(t, 201, &got)
	if want := "esc \u00e9 \U0001F600 \\u0000"; got.Title != want {
		t.Fatalf("title %q, want %q", got.Title, want)
	}
	f.do("GET", "/v1/projects/alpha/items?q="+url.QueryEscape("caf\u00e9"), f.human.Token, nil).ok(t, 200, nil)
}
