package web

import (
	"encoding/json"
	"testing"
)

func TestProgressText(t *testing.T) {
	for in, want := range map[string]string{
		``:                                     "",
		`null`:                                 "",
		`"half way"`:                           "half way",
		`{"message": "tests pass", "done": 3}`: `tests pass {"done":3}`,
		`{"summary": "migrating"}`:             "migrating",
		`{"note": "rendered 31 of 38"}`:        "rendered 31 of 38", // the MCP server's progress_report
		`{"step": 2,  "of": 5}`:                `{"step":2,"of":5}`,
		`[1, 2]`:                               `[1,2]`,
		`"line\ntwo"`:                          "line two",
	} {
		if got := progressText(json.RawMessage(in), 0); got != want {
			t.Errorf("progressText(%s) = %q, want %q", in, got, want)
		}
	}
	if got := progressText(json.RawMessage(`"abcdefghij"`), 5); got != "abcd…" {
		t.Errorf("clipped = %q", got)
	}
}
