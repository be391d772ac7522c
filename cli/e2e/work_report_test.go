package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWorkResultRefused: a command that exits 0 with a result the server
// refuses (over 1 MiB; a NUL it does not store) gets its item failed at
// once, with why, instead of leaving it leased to nobody until the lease
// expires (and work exiting 2 as if its arguments were wrong).
func TestWorkResultRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script, code string
	}{
		{"TooLarge", `head -c 1100000 /dev/zero | tr '\0' a > "$WORKGRAPH_RESULT_FILE"`, "payload_too_large"},
		{"NUL", `printf '{"a": "\\u0000"}' > "$WORKGRAPH_RESULT_FILE"`, "invalid_argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			it := e.item("result refused")
			r := e.run(e.agentToken, nil, "work", "--lease", "5m", "--", "sh", "-c", c.script)
			if r.code != 1 || !strings.Contains(r.stderr, "the server refused its result") {
				t.Fatalf("work: %v", r)
			}
			if got := e.get(it.ID); got.State == client.StateLeased || got.Failures != 1 {
				t.Fatalf("item is %s with %d failures, want failed once and not leased\n%v", got.State, got.Failures, r)
			}
			ls := e.leases(it.ID)
			if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeFailed {
				t.Fatalf("leases %+v, want one failed", ls)
			}
			var detail struct {
				Message string `json:"message"`
				Details struct {
					ResultRefused string `json:"result_refused"`
				} `json:"details"`
			}
			if err := json.Unmarshal(ls[0].OutcomeDetail, &detail); err != nil || detail.Details.ResultRefused != c.code ||
				!strings.Contains(detail.Message, "refused its result") {
				t.Fatalf("outcome detail %s (%v), want the refusal %s", ls[0].OutcomeDetail, err, c.code)
			}
		})
	}
}

// TestWorkBinaryOutput: what the supervisor itself sends from a command's
// bytes (the stdout tail as the result, the stderr tail with a failure, a
// result file that is not JSON) is stored with NUL and bytes that are not
// UTF-8 replaced, instead of the report being refused and the item left
// leased to nobody.
func TestWorkBinaryOutput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script string
		exit         int
		state        string
		want         string // in the stored result or failure
	}{
		{"Stdout", `printf 'a\000b\377c'`, 0, client.StateDone, "a\uFFFDb\uFFFDc"},
		{"ResultText", `printf 'x\000y' > "$WORKGRAPH_RESULT_FILE"`, 0, client.StateDone, "x\uFFFDy"},
		{"Stderr", `printf 'e\000f' >&2; exit 3`, 1, "", "e\uFFFDf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			it := e.item("binary output")
			r := e.run(e.agentToken, nil, "work", "--lease", "5m", "--", "sh", "-c", c.script)
			if r.code != c.exit {
				t.Fatalf("work: exit %d, want %d\n%v", r.code, c.exit, r)
			}
			got := e.get(it.ID)
			if got.State == client.StateLeased || (c.state != "" && got.State != c.state) {
				t.Fatalf("item is %s, want %q and not leased\n%v", got.State, c.state, r)
			}
			ls := e.leases(it.ID)
			if len(ls) != 1 || ls[0].Outcome == nil {
				t.Fatalf("leases %+v, want one ended", ls)
			}
			var stored string
			if c.exit == 0 {
				var res map[string]string
				_ = json.Unmarshal(got.Result, &res)
				stored = res["output_tail"] + res["result_text"]
			} else {
				stored = string(ls[0].OutcomeDetail)
				var detail map[string]any
				_ = json.Unmarshal(ls[0].OutcomeDetail, &detail)
				stored, _ = detail["message"].(string)
			}
			if !strings.Contains(stored, c.want) {
				t.Fatalf("stored %q, want it to hold %q", stored, c.want)
			}
		})
	}
}

// TestWorkProgressRefused: what a command writes to its progress file is
// advisory. A content the server does not store (a NUL escape, a key given
// twice) is dropped with a warning and the lease renewed without it; the
// command used to be stopped and its item left leased to nobody, and under
// --concurrency one run's progress refused every run's heartbeats.
func TestWorkProgressRefused(t *testing.T) {
	t.Parallel()
	const script = `if [ "$WORKGRAPH_ITEM_TITLE" = bad ]; then printf '%s' "$BAD_PROGRESS" > "$WORKGRAPH_PROGRESS_FILE"; fi; sleep 2.5`
	for _, c := range []struct {
		name, progress string
		args           []string
		alone          bool // no good item beside the bad one
	}{
		{"NULEscape", `{"a": "\u0000"}`, nil, false},
		{"KeyTwice", `{"a": 1, "a": 2}`, nil, false},
		{"Concurrency", `{"a": "\u0000"}`, []string{"--concurrency", "2"}, false},
		// The bad run's heartbeats go in batches of their own (nothing
		// else runs): the batch's refusal names body[0].progress.
		{"ConcurrencyAlone", `{"a": "\u0000"}`, []string{"--concurrency", "2"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			items := []*client.Item{e.item("bad")}
			if c.args != nil && !c.alone {
				items = append(items, e.item("good"))
			}
			args := append(append([]string{"work"}, c.args...), "--lease", "3s", "--", "sh", "-c", script)
			r := e.run(e.agentToken, []string{"BAD_PROGRESS=" + c.progress}, args...)
			if r.code != 0 || !strings.Contains(r.stderr, "renewing the lease without it") {
				t.Fatalf("work: %v", r)
			}
			for _, it := range items {
				if got := e.get(it.ID); got.State != client.StateDone {
					t.Fatalf("item %q is %s, want done\n%v", it.Title, got.State, r)
				}
				if ls := e.leases(it.ID); len(ls) != 1 || ls[0].Heartbeats < 1 {
					t.Fatalf("item %q leases %+v, want one, renewed while it ran", it.Title, ls)
				}
			}
		})
	}
}
