package api_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestQueryParameterBounds: every query parameter has a length bound, and a
// longer one is refused with 400 naming it before any database work (a
// 100,000-character q once held a connection for 15 s).
func TestQueryParameterBounds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("p")
	items := "/v1/projects/p/items?"
	history := "/v1/projects/p/leases?"
	tests := map[string]struct {
		path, field string
	}{
		"HugeQ":        {items + "q=" + strings.Repeat("a", 100_000), "q"},
		"LongQ":        {items + "q=" + strings.Repeat("a", 501), "q"},
		"LongQRunes":   {items + "q=" + url.QueryEscape(strings.Repeat("é", 501)), "q"},
		"LongLabel":    {items + "label=" + strings.Repeat("l", 65), "label"},
		"LongCursor":   {items + "cursor=" + strings.Repeat("c", 201), "cursor"},
		"LongState":    {items + "state=" + strings.Repeat("ready,", 100), "state"},
		"ManyStates":   {items + strings.Repeat("state=ready&", 50), "state"},
		"LongParent":   {items + "parent_id=" + strings.Repeat("0", 1000), "parent_id"},
		"LongWorker":   {history + "worker=" + strings.Repeat("w", 201), "worker"},
		"LongSince":    {history + "since=" + strings.Repeat("9", 1000), "since"},
		"LongUnknown":  {items + strings.Repeat("x", 1000) + "=1", strings.Repeat("x", 64)},
		"LongPageSize": {items + "limit=" + strings.Repeat("1", 1000), "limit"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := e.do("GET", tc.path, adminToken, nil)
			p := r.problem(t, 400, "invalid_argument")
			if f, _ := p["field"].(string); !strings.HasPrefix(f, tc.field) {
				t.Fatalf("field %v, want %q (detail %v)", p["field"], tc.field, p["detail"])
			}
			if len(r.body) > 2000 {
				t.Fatalf("the problem echoes the parameter: %d bytes", len(r.body))
			}
		})
	}
	t.Run("AtTheBounds", func(t *testing.T) {
		t.Parallel()
		e.do("GET", items+"q="+url.QueryEscape(strings.Repeat("é", 500))+"&label="+strings.Repeat("l", 64), adminToken, nil).ok(t, 200, nil)
		e.do("GET", history+"worker="+strings.Repeat("w", 200), adminToken, nil).ok(t, 200, nil)
	})
}
