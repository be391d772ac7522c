package cli

import (
	"errors"
	"testing"
)

func TestUsageFlag(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		u, err := usageFlag(`{"tokens_in": 1200, "tokens_out": 300, "cost_usd": 0.02, "tool_calls": 4}`)
		if err != nil || u.TokensIn != 1200 || u.TokensOut != 300 || u.CostUSD != 0.02 || u.ToolCalls != 4 {
			t.Fatalf("usage %+v, %v", u, err)
		}
		if u, err := usageFlag(""); u != nil || err != nil {
			t.Fatalf("empty: %+v, %v", u, err)
		}
	})
	t.Run("ErrNotUsage", func(t *testing.T) {
		t.Parallel()
		// A misspelt member used to be dropped: the heartbeat reported no
		// spend and the command said nothing.
		for _, s := range []string{`{"tokens_inn": 5}`, `{"cost": 1}`, `{"tokens_in": 5} {"tokens_in": 6}`, `null`, `[1]`, `{bad`} {
			u, err := usageFlag(s)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitUsage {
				t.Errorf("usageFlag(%s) = %+v, %v; want exit %d", s, u, err, ExitUsage)
			}
		}
	})
}
