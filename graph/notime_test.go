package graph_test

import (
	"testing"

	"github.com/workgraph-dev/workgraph/clock/clocktest"
)

// TestNoWallClock enforces the clock seam: this package's code never reads
// the wall clock; time reaches it through clock.Clock and the database.
func TestNoWallClock(t *testing.T) {
	t.Parallel()
	clocktest.NoWallClock(t)
}
